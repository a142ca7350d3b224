! A Fortran MPI program (`use mpi`), built by the tests with Debian's mpifort
! (and with MPICH's mpif90, to be refused): rank 0 sends 5 messages of 3
! INTEGERs to rank 1.  Prints its rank and the job's size.
program fortran_mpi
  use mpi
  implicit none
  integer :: ierror, rank, size, i
  integer :: values(3)
  call MPI_Init(ierror)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierror)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierror)
  print '(a, i0, a, i0)', 'rank ', rank, ' of ', size
  do i = 1, 5
    values = i
    if (rank == 0 .and. size > 1) then
      call MPI_Send(values, 3, MPI_INTEGER, 1, i, MPI_COMM_WORLD, ierror)
    else if (rank == 1) then
      call MPI_Recv(values, 3, MPI_INTEGER, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierror)
    end if
  end do
  call MPI_Finalize(ierror)
end program fortran_mpi
