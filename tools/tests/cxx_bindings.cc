// Uses Open MPI's C++ bindings (MPI::, libmpi_cxx.so.40), which our build
// does not have: built with Debian's mpicxx, it runs on the system's
// libmpi_cxx over our libmpi.  Rank 0 sends COUNT ints to rank 1 through
// MPI::COMM_WORLD.Send; rank 0 prints the library version.
// usage: mpirun -np 2 cxx_bindings COUNT
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char **argv)
{
    MPI::Init(argc, argv);
    const int rank = MPI::COMM_WORLD.Get_rank();
    const int count = argc > 1 ? std::atoi(argv[1]) : 0;
    for (int i = 0; i < count; ++i) {
        int value = i;
        if (rank == 0) MPI::COMM_WORLD.Send(&value, 1, MPI::INT, 1, 3);
        if (rank == 1) MPI::COMM_WORLD.Recv(&value, 1, MPI::INT, 0, 3);
    }
    if (rank == 0) {
        char version[MPI_MAX_LIBRARY_VERSION_STRING];
        int length;
        MPI_Get_library_version(version, &length);
        std::printf("library: %s\n", version);
    }
    MPI::Finalize();
    return 0;
}
