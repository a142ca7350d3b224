/* The ordered list's invariant, relative to the expected sequence e: the
 * horizontal ring, walked from the head, is in increasing distance (x - e)
 * mod 2^16, and every range is contiguous. Returns 0 or a reason. */
static const char *check_invariant(mca_pml_ob1_recv_frag_t *q, uint16_t e)
{
    if (!q) return 0;
    mca_pml_ob1_recv_frag_t *p = q;
    int last = -1;
    do {
        int d = (uint16_t)(p->hdr.hdr_match.hdr_seq - e);
        if (d == 0 && p != q) return "expected in ring but not at head";
        if (d <= last) return "ring not in increasing distance from the expected sequence";
        last = d;
        if (p->range) {
            mca_pml_ob1_recv_frag_t *r = p->range; uint16_t s = p->hdr.hdr_match.hdr_seq;
            do { if (r->hdr.hdr_match.hdr_seq != (uint16_t)(s + 1)) return "range not contiguous"; s = r->hdr.hdr_match.hdr_seq; last = (uint16_t)(s - e); r = (void*)r->super.super.opal_list_next; } while (r != p->range);
        }
        p = (void*)p->super.super.opal_list_next;
    } while (p != q);
    return 0;
}
