/* The program of netpipe_runs/callgrind_sample.callgrind, the real callgrind
 * data test_callgrind.py parses: two roots that carry the names
 * callgrind_counts.FUNCTIONS collects in, each calling one leaf, and nothing
 * collected outside them, so the two roots make the total.  Built and
 * recorded, in a folder of its own, with
 *   gcc -g -O0 -fdebug-prefix-map=$PWD=. -o callgrind_sample callgrind_sample.c
 *   valgrind --tool=callgrind --collect-atstart=no --toggle-collect=PMPI_Send \
 *     --toggle-collect=mca_pml_ob1_recv_frag_callback_match \
 *     --callgrind-out-file=callgrind_sample.callgrind ./callgrind_sample
 *   callgrind_annotate --inclusive=yes --threshold=100 callgrind_sample.callgrind \
 *     >callgrind_sample.listing
 * (the listing with this source beside it, so it holds the annotated source
 * too, as the study's listings do). */
int leaf(int n);
int once_a(int n);
int once_b(int n);
int PMPI_Send(int n);
int mca_pml_ob1_recv_frag_callback_match(int n);

int leaf(int n)
{
    int sum = 0;
    for (int i = 0; i < n; i++)
        sum += i;
    return sum;
}

/* Two functions of under 1% of the total each: below --threshold=100,
 * callgrind_annotate's listing would stop after the first. */
int once_a(int n) { return n + 1; }
int once_b(int n) { return n + 2; }

/* Code inlined from another file (as from a header) is listed as a second
 * line of the function that holds it, below the function's own. */
#line 1 "callgrind_sample_inline.h"
static inline __attribute__((always_inline)) int doubled(int n) { return 2 * n; }
#line 38 "callgrind_sample.c"

/* The match does more than the send, so the listing puts it first. */
int PMPI_Send(int n) { return leaf(n); }
int mca_pml_ob1_recv_frag_callback_match(int n)
{
    int found = leaf(doubled(n)) + leaf(n);
    if (n == 0)
        found += once_a(n) + once_b(n);
    return found;
}

int main(void)
{
    volatile int sink = 0;
    for (int message = 0; message < 10; message++)
        sink += PMPI_Send(message) + mca_pml_ob1_recv_frag_callback_match(message);
    return sink < 0;
}
