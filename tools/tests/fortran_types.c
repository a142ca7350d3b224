/*
 * A C program that uses Open MPI's Fortran datatypes, built by the tests with
 * Debian's mpicc and run with our libmpi: a build configured without Fortran
 * has no MPI_INTEGER, MPI_REAL or MPI_DOUBLE_PRECISION even for C programs
 * (ompi/datatype/ompi_datatype_internal.h:444,478-479 of 4.1.4).  Each rank
 * sums COUNT elements of each type over MPI_Allreduce and checks the sums and
 * the types' sizes; rank 0 prints "fortran types: ok" when all agree.
 *
 * usage: mpirun -np 2 fortran_types COUNT
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, wrong = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int count = argc == 2 ? atoi(argv[1]) : 0;
    if (count <= 0 || count > 1000) MPI_Abort(MPI_COMM_WORLD, 2);

    int integers[1000], integer_sums[1000];
    float reals[1000], real_sums[1000];
    double doubles[1000], double_sums[1000];
    for (int i = 0; i < count; ++i) {
        integers[i] = rank + i;
        reals[i] = (float)(rank + i);
        doubles[i] = rank + i + 0.5;
    }
    MPI_Allreduce(integers, integer_sums, count, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(reals, real_sums, count, MPI_REAL, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(doubles, double_sums, count, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD);
    const int ranks_sum = size * (size - 1) / 2;
    for (int i = 0; i < count; ++i) {
        wrong += integer_sums[i] != ranks_sum + size * i;
        wrong += real_sums[i] != (float)(ranks_sum + size * i);
        wrong += double_sums[i] != ranks_sum + size * (i + 0.5);
    }
    int sizes[3];
    MPI_Type_size(MPI_INTEGER, &sizes[0]);
    MPI_Type_size(MPI_REAL, &sizes[1]);
    MPI_Type_size(MPI_DOUBLE_PRECISION, &sizes[2]);
    wrong += sizes[0] != 4 || sizes[1] != 4 || sizes[2] != 8;
    if (rank == 0) printf(wrong ? "fortran types: %d wrong\n" : "fortran types: ok\n", wrong);
    MPI_Finalize();
    return wrong != 0;
}
