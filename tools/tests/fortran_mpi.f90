! A Fortran MPI program (`use mpi`): built by the tests with Debian's mpifort,
! it needs Open MPI's Fortran bindings, libmpi_mpifh.so.40, which our build
! does not have.  Prints its rank.
program fortran_mpi
  use mpi
  implicit none
  integer :: ierror, rank
  call MPI_Init(ierror)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierror)
  print *, 'rank', rank
  call MPI_Finalize(ierror)
end program fortran_mpi
