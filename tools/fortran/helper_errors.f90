! The module spc_counters on 2 ranks (`use mpi`): what a mistake gives, an
! error code and a message, never a crash, and a count read right.
!   - an unknown name: SPC_COUNTER_UNKNOWN, "unknown counter NO_SUCH_COUNTER";
!   - a counter not kept per communicator, bound to one (WTIME):
!     SPC_COUNTER_NOT_PER_COMM, and the message lists those that are;
!   - a per-peer array bound to MPI_COMM_WORLD: SPC_COUNTER_NOT_SCALAR;
!   - a handle it never gave, and one freed: SPC_COUNTER_BAD_HANDLE;
!   - SEND spelled OMPI_SPC_SEND and 'send' bound to MPI_COMM_WORLD: both
!     read the NSEND sends rank 0 makes next (rank 1: 0).
! Each message is printed ("message: ..."), for check_helper.py.
program helper_errors
  use mpi
  use spc_counters
  implicit none
  integer, parameter :: NSEND = 3
  integer :: ierr, rank, handle, check, nfail, by_name, bound_send, i, buf(1)
  integer(8) :: value
  character(len=1024) :: message

  nfail = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)

  call spc_counter_start('NO_SUCH_COUNTER', handle, check)
  call expect_error(SPC_COUNTER_UNKNOWN, 'unknown counter NO_SUCH_COUNTER')
  call expect(handle == 0, 'no handle for an unknown counter')
  call spc_counter_start('WTIME', handle, check, comm=MPI_COMM_WORLD)
  call expect_error(SPC_COUNTER_NOT_PER_COMM, 'is not kept per communicator')
  call spc_counter_start('PEER_MESSAGES_SENT', handle, check, comm=MPI_COMM_WORLD)
  call expect_error(SPC_COUNTER_NOT_SCALAR, 'holds 2 values, not one')
  call spc_counter_read(12345, value, check)
  call expect_error(SPC_COUNTER_BAD_HANDLE, '12345 is not a started counter''s handle')

  call spc_counter_start('OMPI_SPC_SEND', by_name, check)
  call expect(check == SPC_COUNTER_OK, 'OMPI_SPC_SEND starts')
  call spc_counter_start('send', bound_send, check, comm=MPI_COMM_WORLD)
  call expect(check == SPC_COUNTER_OK, 'send bound to MPI_COMM_WORLD starts')
  do i = 1, NSEND
    buf(1) = i
    if (rank == 0) call MPI_Send(buf, 1, MPI_INTEGER, 1, i, MPI_COMM_WORLD, ierr)
    if (rank == 1) call MPI_Recv(buf, 1, MPI_INTEGER, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  end do
  call spc_counter_read(by_name, value, check)
  call expect(check == SPC_COUNTER_OK .and. value == merge(NSEND, 0, rank == 0), 'SEND read')
  call spc_counter_read(bound_send, value, check)
  call expect(check == SPC_COUNTER_OK .and. value == merge(NSEND, 0, rank == 0), &
              'SEND bound to MPI_COMM_WORLD read')
  call spc_counter_free(by_name, check)
  call expect(check == SPC_COUNTER_OK .and. by_name == 0, 'free')
  call spc_counter_read(1, value, check)
  call expect_error(SPC_COUNTER_BAD_HANDLE, '1 is not a started counter''s handle')
  call spc_counters_finalize(check)
  call expect(check == SPC_COUNTER_OK, 'finalize')

  if (nfail == 0) print '(a, i0, a)', 'rank ', rank, ': all checks passed'
  call MPI_Finalize(ierr)
  if (nfail /= 0) stop 1

contains

  subroutine expect(condition, what)
    logical, intent(in) :: condition
    character(len=*), intent(in) :: what
    if (.not. condition) then
      nfail = nfail + 1
      print '(a, i0, 2a)', 'FAIL rank ', rank, ': ', what
    end if
  end subroutine expect

  ! The last call returned code and its message holds text.
  subroutine expect_error(code, text)
    integer, intent(in) :: code
    character(len=*), intent(in) :: text
    call spc_counter_error(message)
    if (rank == 0) print '(2a)', 'message: ', trim(message)
    call expect(check == code, 'error code for "' // text // '"')
    call expect(index(message, text) > 0, 'message with "' // text // '"')
  end subroutine expect_error

end program helper_errors
