! spc_counters: the SPC counters of this Open MPI build read from Fortran,
! through MPI_T (which has no Fortran binding) by the C of libspc_fortran
! (spc_fortran.c).  Works beside any of the three bindings (mpif.h, use mpi,
! use mpi_f08): it takes a communicator as its Fortran integer handle
! (comm, or comm%MPI_VAL with mpi_f08) and uses no MPI module.
!
!   use spc_counters
!   call spc_counter_start('SEND', handle, ierror)               ! process-wide
!   call spc_counter_start('SEND', on_dup, ierror, comm=dup)     ! bound to dup
!   call spc_counter_read(handle, value, ierror)                 ! integer(8): since the start
!   if (ierror /= SPC_COUNTER_OK) call spc_counter_error(message)
!   call spc_counters_finalize(ierror)                           ! before MPI_Finalize
!
! Build with this build's mpifort and -lspc_fortran (tools/fortran/install.sh
! puts the library and spc_counters.mod beside Open MPI's own).
module spc_counters
  use, intrinsic :: iso_c_binding, only: c_char, c_int, c_int64_t, c_null_char
  implicit none
  private
  public :: spc_counter_start, spc_counter_read, spc_counter_free, spc_counters_finalize, &
            spc_counter_error

  ! The error codes (spc_fortran.c's SPC_FORTRAN_*).
  integer, parameter, public :: SPC_COUNTER_OK = 0
  integer, parameter, public :: SPC_COUNTER_UNKNOWN = 1       ! no such counter in this Open MPI
  integer, parameter, public :: SPC_COUNTER_NOT_PER_COMM = 2  ! not kept per communicator
  integer, parameter, public :: SPC_COUNTER_BAD_HANDLE = 3    ! not a started counter's handle
  integer, parameter, public :: SPC_COUNTER_NOT_SCALAR = 4    ! an array (per peer, histogram)
  integer, parameter, public :: SPC_COUNTER_MPI_T = 5         ! an MPI_T call failed
  integer, parameter, public :: SPC_COUNTER_NO_MPI = 6        ! bound, outside MPI_Init..MPI_Finalize

  interface
    integer(c_int) function c_start(name, comm, bound, handle) bind(C, name='spc_fortran_start')
      import :: c_char, c_int
      character(kind=c_char), intent(in) :: name(*)
      integer(c_int), value :: comm, bound
      integer(c_int), intent(out) :: handle
    end function c_start
    integer(c_int) function c_read(handle, value) bind(C, name='spc_fortran_read')
      import :: c_int, c_int64_t
      integer(c_int), value :: handle
      integer(c_int64_t), intent(out) :: value
    end function c_read
    integer(c_int) function c_free(handle) bind(C, name='spc_fortran_free')
      import :: c_int
      integer(c_int), value :: handle
    end function c_free
    integer(c_int) function c_finalize() bind(C, name='spc_fortran_finalize')
      import :: c_int
    end function c_finalize
    integer(c_int) function c_error_message(message, size) bind(C, name='spc_fortran_error_message')
      import :: c_char, c_int
      character(kind=c_char), intent(out) :: message(*)
      integer(c_int), value :: size
    end function c_error_message
  end interface

contains

  ! Starts counter name (SEND or OMPI_SPC_SEND, any case); with comm, the
  ! counter bound to that communicator.  handle is 0 on an error.
  subroutine spc_counter_start(name, handle, ierror, comm)
    character(len=*), intent(in) :: name
    integer, intent(out) :: handle, ierror
    integer, intent(in), optional :: comm
    integer(c_int) :: c_handle
    if (present(comm)) then
      ierror = c_start(trim(name) // c_null_char, int(comm, c_int), 1_c_int, c_handle)
    else
      ierror = c_start(trim(name) // c_null_char, 0_c_int, 0_c_int, c_handle)
    end if
    handle = c_handle
  end subroutine spc_counter_start

  ! What the counter counted since spc_counter_start.
  subroutine spc_counter_read(handle, value, ierror)
    integer, intent(in) :: handle
    integer(8), intent(out) :: value
    integer, intent(out) :: ierror
    integer(c_int64_t) :: c_value
    c_value = 0
    ierror = c_read(int(handle, c_int), c_value)
    value = c_value
  end subroutine spc_counter_read

  subroutine spc_counter_free(handle, ierror)
    integer, intent(inout) :: handle
    integer, intent(out) :: ierror
    ierror = c_free(int(handle, c_int))
    handle = 0
  end subroutine spc_counter_free

  ! Frees every counter; before freeing a communicator one is bound to, and
  ! before MPI_Finalize.
  subroutine spc_counters_finalize(ierror)
    integer, intent(out) :: ierror
    ierror = c_finalize()
  end subroutine spc_counters_finalize

  ! The last error's message, blank-padded (cut to len(message)).
  subroutine spc_counter_error(message)
    character(len=*), intent(out) :: message
    character(kind=c_char) :: buffer(1024)
    integer :: length, i
    length = c_error_message(buffer, int(size(buffer), c_int))
    length = min(length, size(buffer) - 1, len(message))
    message = ' '
    do i = 1, length
      message(i:i) = buffer(i)
    end do
  end subroutine spc_counter_error

end module spc_counters
