/* The few Open MPI types the ordered list touches, for the harness. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <assert.h>
typedef struct opal_list_item_t { struct opal_list_item_t *opal_list_next, *opal_list_prev; } opal_list_item_t;
typedef struct { opal_list_item_t super; } opal_free_list_item_t;
typedef struct { uint16_t hdr_seq; } mca_pml_ob1_match_hdr_t;
typedef struct mca_pml_ob1_recv_frag_t {
    opal_free_list_item_t super;
    union { mca_pml_ob1_match_hdr_t hdr_match; } hdr;
    struct mca_pml_ob1_recv_frag_t *range;
} mca_pml_ob1_recv_frag_t;
