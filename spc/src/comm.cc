// Storage of the counters kept per communicator (spc.h, "Counters bound to
// communicators"); the communicator's owner (Open MPI's PML) holds it.
#include <cstdlib>
#include <cstring>

#include "internal.hpp"

extern "C" {

struct spc_comm *spc_comm_create(void)
{
    void *memory = std::aligned_alloc(alignof(spc_comm), sizeof(spc_comm));
    if (memory != nullptr) {
        std::memset(memory, 0, sizeof(spc_comm));
    }
    return static_cast<spc_comm *>(memory);
}

void spc_comm_destroy(struct spc_comm *comm) { std::free(comm); }

uint64_t spc_comm_read(const struct spc_comm *comm, int id)
{
    if (comm == nullptr || id < 0 || id >= SPC_NUM_COMM_COUNTERS) {
        return 0;
    }
    return __atomic_load_n(&comm->value[id], __ATOMIC_RELAXED);
}

}  // extern "C"
