/* Random arrival orders around the 16-bit wrap: messages start..start+n-1,
 * each arrives at its index plus a random delay of 0..maxdelay; the receive
 * logic of mca_pml_ob1_recv_frag_callback_match (pml_ob1_recvfrag.c:387-398
 * and 484-497 of 4.1.4): a fragment that is not the expected one goes to the
 * ordered list and the callback returns; the expected one is matched, then
 * the list's head is matched while it is the next expected.  A trial is
 * "stuck" when a message is left in the list at the end (the receiver would
 * wait for it forever).  STRICT=1 also checks the list's ordering invariant
 * (check.h) after every arrival.
 * usage: sim2_VARIANT TRIALS N MAXDELAY START [SEED] */
#define APPEND append_frag_to_ordered_list
#include "check.h"
static mca_pml_ob1_recv_frag_t *queue;
static uint16_t expected;
struct ev { double t; uint32_t n; };
static int cmp(const void *a, const void *b) { const struct ev *x = a, *y = b; return x->t < y->t ? -1 : x->t > y->t; }
int main(int argc, char **argv)
{
    int strict = getenv("STRICT") != 0; long trials = atol(argv[1]); int n = atoi(argv[2]); int maxdelay = atoi(argv[3]); unsigned start = atoi(argv[4]);
    srand(argc > 5 ? atoi(argv[5]) : 1);
    long bad = 0, stuck = 0; const char *first = 0;
    struct ev *e = malloc(n * sizeof *e); mca_pml_ob1_recv_frag_t *fr = calloc(n, sizeof *fr);
    for (long t = 0; t < trials; t++) {
        for (int i = 0; i < n; i++) { e[i].t = i + rand() % (maxdelay + 1) + rand() / (double)RAND_MAX * 0.5; e[i].n = i; }
        qsort(e, n, sizeof *e, cmp);
        queue = NULL; expected = (uint16_t)start; long delivered = 0; const char *why = 0;
        for (int i = 0; i < n && !why; i++) {
            mca_pml_ob1_recv_frag_t *f = &fr[e[i].n];
            f->hdr.hdr_match.hdr_seq = (uint16_t)(start + e[i].n);
            if (f->hdr.hdr_match.hdr_seq != expected) APPEND(&queue, f, expected);
            else {
                expected++; delivered++;
                while (queue && queue->hdr.hdr_match.hdr_seq == expected) { remove_head_from_ordered_list(&queue); expected++; delivered++; }
            }
            why = strict ? check_invariant(queue, expected) : 0;
        }
        if (why) { bad++; if (!first) { first = why; printf("trial %ld: %s\n", t, why); } }
        else if (delivered != n) stuck++;
    }
    printf("start %u n %d maxdelay %d: %ld of %ld trials broke the invariant, %ld stuck otherwise\n", start, n, maxdelay, bad, trials, stuck);
    return 0;
}
