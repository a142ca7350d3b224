! The README's Fortran example on the helper (module spc_counters,
! libspc_fortran): rank 0 sends 10 messages to rank 1; each rank prints its
! SEND counter, read from Fortran.  Built by check_versions.py with one
! Open MPI build's mpifort against the helper of the other's.
program fortran_sends
  use mpi_f08
  use spc_counters
  implicit none
  integer :: rank, i, value(1), sends_handle, ierror
  integer(8) :: sent
  character(len=256) :: message
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call spc_counter_start('SEND', sends_handle, ierror)
  if (ierror /= SPC_COUNTER_OK) then
    call spc_counter_error(message)
    print '(a)', trim(message)
  end if
  do i = 1, 10
    value = i
    if (rank == 0) call MPI_Send(value, 1, MPI_INTEGER, 1, 0, MPI_COMM_WORLD)
    if (rank == 1) call MPI_Recv(value, 1, MPI_INTEGER, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
  end do
  call spc_counter_read(sends_handle, sent, ierror)
  print '(a, i0, a, i0)', 'rank ', rank, ' sent ', sent
  call spc_counters_finalize(ierror)
  call MPI_Finalize()
end program fortran_sends
