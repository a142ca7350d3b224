/* Every arrival order of n consecutive messages (n <= 11), with the
 * expected sequence before them at 1000 (no wrap) and at each of
 * 65536-n .. 65536 (the wrap falls inside them): how many orders leave a
 * message in the out-of-sequence list for good, and how many break the
 * list's ordering invariant (check.h) at some point.
 * usage: exhaust_VARIANT N */
#define APPEND append_frag_to_ordered_list
#include "check.h"
static int n, perm[12]; static long orders, stuck, broken; static uint16_t start; static int printed;
static void run(void)
{
    mca_pml_ob1_recv_frag_t fr[12] = {0}, *queue = NULL; uint16_t expected = start; int delivered = 0;
    for (int i = 0; i < n; i++) {
        mca_pml_ob1_recv_frag_t *f = &fr[perm[i]]; f->hdr.hdr_match.hdr_seq = (uint16_t)(start + perm[i]);
        if (f->hdr.hdr_match.hdr_seq != expected) APPEND(&queue, f, expected);
        else { expected++; delivered++; while (queue && queue->hdr.hdr_match.hdr_seq == expected) { remove_head_from_ordered_list(&queue); expected++; delivered++; } }
        if (check_invariant(queue, expected)) broken++;
    }
    orders++;
    if (delivered != n) { stuck++; if (printed++ < (getenv("ALL") ? 1000000 : 3)) { printf("  stuck: expected %u, arrival order:", start); for (int i = 0; i < n; i++) printf(" %u", (uint16_t)(start + perm[i])); printf(" -> waits for %u, head %u\n", expected, queue->hdr.hdr_match.hdr_seq); } }
}
static void permute(int k) { if (k == n) { run(); return; } for (int i = k; i < n; i++) { int t = perm[k]; perm[k] = perm[i]; perm[i] = t; permute(k + 1); t = perm[k]; perm[k] = perm[i]; perm[i] = t; } }
int main(int argc, char **argv)
{
    n = atoi(argv[1]);
    for (int s = -1; s <= n; s++) {
        start = s < 0 ? 1000 : (uint16_t)(65536 - n + s);
        for (int i = 0; i < n; i++) perm[i] = i;
        orders = stuck = broken = 0; printed = 0;
        permute(0);
        printf("expected %5u, %d messages: %ld orders, %ld leave a message stuck, %ld break the ordering invariant\n", start, n, orders, stuck, broken);
    }
}
