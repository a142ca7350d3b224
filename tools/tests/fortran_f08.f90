! A Fortran 2008 MPI program (`use mpi_f08`): built by the tests with Debian's
! mpifort, it needs libmpi_usempif08.so.40, which our build does not have.
! Prints its rank.
program fortran_f08
  use mpi_f08
  implicit none
  integer :: rank
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  print *, 'rank', rank
  call MPI_Finalize()
end program fortran_f08
