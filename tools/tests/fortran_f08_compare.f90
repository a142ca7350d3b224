! A Fortran 2008 MPI program (`use mpi_f08`) that compares handles (== and
! /=, procedures of Open MPI's mpi_f08 module) and reads a status: built by
! check_checker.py with Debian's mpifort (Open MPI 4.1.4), whose module
! Open MPI 5.0 replaced.  Rank 0 sends one INTEGER with tag 3 to rank 1 on a
! duplicate of MPI_COMM_WORLD; rank 1 prints the tag and source it received.
program fortran_f08_compare
  use mpi_f08
  implicit none
  type(MPI_Comm) :: dup
  type(MPI_Status) :: status
  integer :: rank, value
  call MPI_Init()
  call MPI_Comm_dup(MPI_COMM_WORLD, dup)
  if (dup == MPI_COMM_NULL) stop 1
  if (dup /= MPI_COMM_WORLD) then
    call MPI_Comm_rank(dup, rank)
    value = rank
    if (rank == 0) call MPI_Send(value, 1, MPI_INTEGER, 1, 3, dup)
    if (rank == 1) then
      call MPI_Recv(value, 1, MPI_INTEGER, 0, MPI_ANY_TAG, dup, status)
      print '(a, i0, a, i0)', 'received tag ', status%MPI_TAG, ' from ', status%MPI_SOURCE
    end if
  end if
  call MPI_Comm_free(dup)
  call MPI_Finalize()
end program fortran_f08_compare
