/*
 * The bytes of a neighbourhood collective (MPI_Neighbor_* and
 * MPI_Ineighbor_*), for hook COLLECTIVE's all-to-all kind: what the
 * calling rank sends the other ranks of its communicator's topology.
 * Included by those ten bindings only; evaluated only while the hook is on.
 */
#ifndef OMPI_SPC_NEIGHBORS_H
#define OMPI_SPC_NEIGHBORS_H

#include "ompi/runtime/ompi_spc_hooks.h"

#if SPC_ENABLE
#include "ompi/mca/topo/base/base.h"
#include "ompi/mca/topo/topo.h"

/* One block to neighbour peer, the slot-th in MPI's order: count of type,
 * or counts[slot] of type (types[slot] if types is not NULL); nothing to
 * MPI_PROC_NULL, whose block MPI does not access, or to the rank itself
 * (a periodic dimension of one rank), which is not traffic. */
static inline uint64_t ompi_spc_neighbor_block(int peer, int self, int slot, int count, const ompi_datatype_t *type,
                                               const int *counts, ompi_datatype_t *const *types)
{
    if (MPI_PROC_NULL == peer || self == peer) {
        return 0;
    }
    return ompi_spc_data_bytes(NULL != counts ? counts[slot] : count, NULL != types ? types[slot] : type);
}

/* The blocks to every out-neighbour of comm's topology, in the order MPI
 * numbers them (MPI 4.1, neighborhood collective communication): a Cartesian topology's in each
 * dimension the rank at -1, then at +1, MPI_PROC_NULL included (the
 * topology's own shift, mca_topo_base_cart_shift); a graph's its edges
 * (index and edges as MPI_Graph_create took them); a distributed graph's
 * its destinations.  Seed 003's coll monitoring reads every topology as
 * Cartesian and numbers a Cartesian one's blocks without its
 * MPI_PROC_NULL neighbours (coll_monitoring_neighbor_alltoallv.c:31-60). */
static inline uint64_t ompi_spc_neighbor_bytes(ompi_communicator_t *comm, int count, const ompi_datatype_t *type,
                                               const int *counts, ompi_datatype_t *const *types)
{
    const int self = ompi_comm_rank(comm);
    uint64_t bytes = 0;
    int slot = 0;
    if (OMPI_COMM_IS_CART(comm)) {
        const mca_topo_base_comm_cart_2_2_0_t *cart = comm->c_topo->mtc.cart;
        for (int dim = 0; dim < cart->ndims; ++dim) {
            int source = MPI_PROC_NULL, dest = MPI_PROC_NULL;
            mca_topo_base_cart_shift(comm, dim, 1, &source, &dest);
            bytes += ompi_spc_neighbor_block(source, self, slot++, count, type, counts, types);
            bytes += ompi_spc_neighbor_block(dest, self, slot++, count, type, counts, types);
        }
    } else if (OMPI_COMM_IS_GRAPH(comm)) {
        const mca_topo_base_comm_graph_2_2_0_t *graph = comm->c_topo->mtc.graph;
        for (int edge = 0 == self ? 0 : graph->index[self - 1]; edge < graph->index[self]; ++edge) {
            bytes += ompi_spc_neighbor_block(graph->edges[edge], self, slot++, count, type, counts, types);
        }
    } else if (OMPI_COMM_IS_DIST_GRAPH(comm)) {
        const mca_topo_base_comm_dist_graph_2_2_0_t *dist_graph = comm->c_topo->mtc.dist_graph;
        for (int i = 0; i < dist_graph->outdegree; ++i) {
            bytes += ompi_spc_neighbor_block(dist_graph->out[i], self, slot++, count, type, counts, types);
        }
    }
    return bytes;
}
#endif

#endif
