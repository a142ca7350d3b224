! Exact SPC counts from a Fortran program on 2 ranks: the same traffic and
! predictions through each of Open MPI's three Fortran bindings, one chosen
! when built: the `use mpi` binding (the module mpi, ignore-TKR interfaces),
! with -DSPC_MPIFH the mpif.h binding (include 'mpif.h'), with -DSPC_F08
! the `use mpi_f08` binding (derived-type handles, optional ierror,
! ASYNCHRONOUS buffers); it names itself counts_f08 on mpi_f08, counts_mpi
! on the other two.  Three phases of traffic, each with
! the counts this program predicts for it, read inside the program through PAPI
! (sde:::ompi_spc::OMPI_SPC_*, PAPIF_*) and, built with -DSPC_HELPER,
! through MPI_T (module spc_counters of libspc_fortran):
!   A  point-to-point on MPI_COMM_WORLD: rank 0 sends NPING pings of summed
!      sizes (eager and rendezvous) to receives rank 1 posted before, then K
!      messages rank 1 lets arrive unreceived (unexpected on purpose: it
!      probes for the last, then receives them);
!   B  MPI_Comm_dup, NBCAST bcasts, NALLRED allreduces, one alltoallw,
!      NBARRIER barriers, NPUT puts and NGET gets in a fence epoch; and
!      what the Fortran library does with Open MPI's structs itself
!      (attributes: MPI_TAG_UB and one of its own; a group; an error it
!      returns through MPI_COMM_WORLD's error handler; the requests of
!      MPI_Wait and MPI_Test in phases A and C), which with Debian's
!      Fortran library over our libmpi shows our fields are where Debian's
!      library reads them.  Unexpected messages are not predicted here:
!      collectives' internal messages may or may not arrive before their
!      receives;
!   C  on the duplicate: an Isend to a posted Irecv, then a message after it
!      (rank 1 waits for that one and tests the first: done), and KD
!      unexpected messages; counters bound to the duplicate, exact.
! Between phases, and before MPI_Finalize (whose report communicates), the
! ranks hand over with 0-byte messages to receives posted earlier: no
! message of a phase, nor of the finalize report, can reach a rank still
! counting the one before.
! Then it writes the totals a finalize CSV must hold ("predict RANK NAME
! VALUE", "predict_comm RANK NAME VALUE" for the duplicate, named
! "fortran dup"), which tools/fortran/check_counts.py compares: to
! PREDICTIONS.RANK, or to standard output without PREDICTIONS (where the
! ranks' lines and the finalize report may interleave).
!
! usage: counts_mpi|counts_f08 [count|plant|plain [PREDICTIONS [NOT_COUNTED]]]
!   count  (default) the counts above; exit status 1 if one differs
!   plant  the same with rank 0's phase A SEND predicted one too many: the
!          checks must fail (the control of the checker)
!   plain  no counters at all (any Open MPI): the traffic and its data checks
! NOT_COUNTED: the counters above the job's PML does not count, by name,
! comma-separated (UNEXPECTED under pml cm).  Such a counter is not offered:
! no MPI_T variable of it (spc_counter_start answers SPC_COUNTER_UNKNOWN),
! process-wide or bound, and no total of it is written (a CSV has no row);
! MPI_Init does not register it with PAPI, which reads it as -1 at every
! checkpoint (its value for an event no library registered).

! What the bindings spell differently, spelled here once.  HANDLE(MPI_Comm)
! declares a handle: an integer, on mpi_f08 that derived type;
! HANDLE_VALUE(h) is its integer, what the spc_counters helper takes.  The
! error argument, the last on mpi and mpif.h, is optional on mpi_f08 and
! left out there, as its users may: IERR after other arguments, IERR_ALONE
! alone.  ASYNC: the attribute mpi_f08 asks of nonblocking calls' buffers.
#ifdef SPC_F08
#define HANDLE(f08_type) type(f08_type)
#define HANDLE_VALUE(handle) handle%MPI_VAL
#define IERR
#define IERR_ALONE
#define ASYNC , asynchronous
#else
#define HANDLE(f08_type) integer
#define HANDLE_VALUE(handle) handle
#define IERR , ierr
#define IERR_ALONE ierr
#define ASYNC
#endif
program counts
  use, intrinsic :: iso_fortran_env, only: output_unit
#if defined(SPC_F08)
  use mpi_f08
#elif !defined(SPC_MPIFH)
  use mpi
#endif
#ifdef SPC_HELPER
  use spc_counters
#endif
  implicit none
#ifdef SPC_MPIFH
  include 'mpif.h'
#endif
  include 'f90papi.h'

  integer, parameter :: NPING = 20, K = 6, KD = 4, NBCAST = 3, NALLRED = 2, NBARRIER = 2
  integer, parameter :: NPUT = 3, NGET = 2, NWIN = 8
  integer, parameter :: PING_TAG = 1, READY_TAG = 4, LATE_TAG = 100, ISEND_TAG = 20, &
                        AFTER_TAG = 22, DUP_LATE_TAG = 30, DONE_TAG = 40, GO_TAG = 41
  ! The counters this program predicts, by catalogue name.
  integer, parameter :: C_SEND = 1, C_RECV = 2, C_ISEND = 3, C_IRECV = 4, C_WAIT = 5, &
                        C_WAITALL = 6, C_TEST = 7, C_PROBE = 8, C_BARRIER = 9, C_BCAST = 10, &
                        C_ALLREDUCE = 11, C_ALLTOALLW = 12, C_PUT = 13, C_GET = 14, &
                        C_COMM_DUP = 15, C_SENT = 16, C_RECEIVED = 17, C_UNEXPECTED = 18, NC = 18
  character(len=20), parameter :: names(NC) = [character(len=20) :: 'SEND', 'RECV', 'ISEND', &
      'IRECV', 'WAIT', 'WAITALL', 'TEST', 'PROBE', 'BARRIER', 'BCAST', 'ALLREDUCE', 'ALLTOALLW', &
      'PUT', 'GET', 'COMM_DUP', 'BYTES_SENT_USER', 'BYTES_RECEIVED_USER', 'UNEXPECTED']
  ! Those also read bound to the duplicate (SPC_PER_COMM rows of the catalogue).
  integer, parameter :: NB = 5
  integer, parameter :: bound(NB) = [C_SEND, C_RECV, C_SENT, C_RECEIVED, C_UNEXPECTED]
  integer(8), parameter :: UNPREDICTED = -1
  ! what PAPI reads of an event no library registered
  integer(8), parameter :: NOT_REGISTERED = -1
#ifdef SPC_F08
  character(len=*), parameter :: program_name = 'counts_f08'
#else
  character(len=*), parameter :: program_name = 'counts_mpi'
  integer :: ierr
#endif

  integer :: rank, nranks, other, i, kk, c, nfail, offset
  HANDLE(MPI_Comm) :: dup
  HANDLE(MPI_Win) :: win
  HANDLE(MPI_Group) :: group
  HANDLE(MPI_Request) :: ready_req, dup_ready_req, isend_req, req20, req22, ping_req(NPING)
  HANDLE(MPI_Request) :: done_a_req, go_b_req, done_c_req, go_end_req
  HANDLE(MPI_Datatype) :: types(2)
  integer :: group_size, eventset, check
  integer :: ping_count(NPING), ping_offset(NPING + 1)
  integer, allocatable ASYNC :: pingbuf(:)
  integer ASYNC :: ready_buf(1), turn_buf(1), dup_buf(3), after_buf(1), origin(NPUT), got(NGET), w(NWIN)
  integer :: late_buf(1), dup_late(2 * KD)
  integer :: bcast_buf(5), sum_in(2), sum_out(2)
  integer :: a2a_send(5), a2a_recv(5), scounts(2), sdispls(2), rcounts(2), rdispls(2)
  integer(kind=MPI_ADDRESS_KIND) :: win_size, disp, tag_ub
  logical :: flag, counting, plant
  integer :: err_code, keyval
  integer(kind=MPI_ADDRESS_KIND) :: attr_val, extra_state
  character(len=MPI_MAX_ERROR_STRING + 8) :: long_string
  character(len=16) :: mode
  character(len=1024) :: predictions, path, not_counted
  logical :: counted(NC)
  integer :: unit
  character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: version
  integer :: version_len
  integer(8) :: pred(NC, 0:4), bpred(NB), total, ping_bytes, late_bytes, dup_bytes
  integer(8) :: papi_now(NC), papi_last(NC)
#ifdef SPC_HELPER
  integer(8) :: mpit_now(NC), mpit_last(NC)
  integer :: mpit(NC), mpit_bound(NB)
#endif

  mode = 'count'
  if (command_argument_count() >= 1) call get_command_argument(1, mode)
  predictions = ''
  if (command_argument_count() >= 2) call get_command_argument(2, predictions)
  not_counted = ''
  if (command_argument_count() >= 3) call get_command_argument(3, not_counted)
  call mark_not_counted(not_counted, flag)
  if ((mode /= 'count' .and. mode /= 'plant' .and. mode /= 'plain') .or. .not. flag) then
    print '(a)', 'usage: ' // program_name // ' [count|plant|plain [PREDICTIONS [NOT_COUNTED]]]'
    stop 2
  end if
  counting = mode /= 'plain'
  plant = mode == 'plant'
  nfail = 0

  call MPI_Init(IERR_ALONE)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank IERR)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks IERR)
  if (nranks /= 2) then
    print '(a)', program_name // ' runs on 2 ranks'
    call MPI_Abort(MPI_COMM_WORLD, 2 IERR)
  end if
  other = 1 - rank
  if (rank == 0) call print_libraries()
  done_a_req = MPI_REQUEST_NULL                      ! each rank posts two of the four
  go_b_req = MPI_REQUEST_NULL
  done_c_req = MPI_REQUEST_NULL
  go_end_req = MPI_REQUEST_NULL
  ! which libmpi runs this program (ours says "ompi-spc")
  call MPI_Get_library_version(version, version_len IERR)
  if (rank == 0) print '(2a)', 'library ', version(1:index(version(1:version_len) // new_line('a'), new_line('a')) - 1)

  ! --- what each phase makes this rank count --------------------------------
  ping_offset(1) = 0
  ping_bytes = 0
  do i = 1, NPING
    ping_count(i) = mod(i * 1237, 9001)              ! up to 35 KiB: eager and rendezvous
    ping_offset(i + 1) = ping_offset(i) + ping_count(i)
    ping_bytes = ping_bytes + 4_8 * ping_count(i)   ! MPI_INTEGER is 4 bytes
  end do
  late_bytes = 4_8 * K
  dup_bytes = 4_8 * 3 + 4_8 * 1                       ! the Isend and the message after it
  do kk = 0, KD - 1
    dup_bytes = dup_bytes + 4_8 * (2 * kk + 1)
  end do
  pred = 0
  bpred = 0
  pred(C_BARRIER, 0) = 1
  pred(C_UNEXPECTED, 0) = UNPREDICTED
  pred([C_COMM_DUP, C_ALLTOALLW], 2) = 1
  pred(C_BCAST, 2) = NBCAST
  pred(C_ALLREDUCE, 2) = NALLRED
  pred(C_BARRIER, 2) = NBARRIER
  pred(C_PUT, 2) = NPUT
  pred(C_GET, 2) = NGET
  pred(C_UNEXPECTED, 2) = UNPREDICTED
  if (rank == 0) then
    pred(C_IRECV, 0) = 2                              ! the "ready" of phase A, "done" after it
    pred([C_WAIT, C_SEND], 2) = 1                     ! "done", then "go"
    pred(C_WAIT, 1) = 1
    pred(C_SEND, 1) = NPING + K
    pred(C_SENT, 1) = ping_bytes + late_bytes
    pred(C_IRECV, 2) = 2                              ! the "ready" of phase C, "done" after it
    pred([C_WAIT, C_SEND], 4) = 1                     ! after the counters: "done", then "go"
    pred(C_WAIT, 3) = 2
    pred(C_ISEND, 3) = 1
    pred(C_SEND, 3) = 1 + KD
    pred(C_SENT, 3) = dup_bytes
    bpred(1) = 1 + KD                                 ! SEND on the duplicate
    bpred(3) = dup_bytes                              ! BYTES_SENT_USER
    if (plant) pred(C_SEND, 1) = pred(C_SEND, 1) + 1
  else
    pred(C_IRECV, 0) = NPING + 1                      ! the pings, "go" after phase A
    pred([C_SEND, C_WAIT], 2) = 1                     ! "done", then "go"
    pred(C_SEND, 1) = 1
    pred(C_WAITALL, 1) = 1
    pred(C_PROBE, 1) = 1
    pred(C_RECV, 1) = K
    pred(C_RECEIVED, 1) = ping_bytes + late_bytes
    pred(C_UNEXPECTED, 1) = K
    pred(C_IRECV, 2) = 3                              ! 2 on the duplicate, "go" after phase C
    pred([C_SEND, C_WAIT], 4) = 1                     ! after the counters: "done", then "go"
    pred(C_SEND, 3) = 1
    pred(C_WAIT, 3) = 1
    pred(C_TEST, 3) = 1
    pred(C_PROBE, 3) = 1
    pred(C_RECV, 3) = KD
    pred(C_RECEIVED, 3) = dup_bytes
    pred(C_UNEXPECTED, 3) = KD
    bpred(1) = 1                                      ! SEND: the "ready"
    bpred(2) = KD                                     ! RECV
    bpred(4) = dup_bytes                              ! BYTES_RECEIVED_USER
    bpred(5) = KD                                     ! UNEXPECTED
  end if

  ! --- set-up: receives that must not be unexpected are posted first -------
  allocate(pingbuf(max(1, ping_offset(NPING + 1))))
  if (rank == 1) then
    pingbuf = -1
    do i = 1, NPING
      call MPI_Irecv(pingbuf(ping_offset(i) + 1), ping_count(i), MPI_INTEGER, 0, PING_TAG, &
                     MPI_COMM_WORLD, ping_req(i) IERR)
    end do
    call MPI_Irecv(turn_buf, 0, MPI_INTEGER, 0, GO_TAG, MPI_COMM_WORLD, go_b_req IERR)
  else
    do i = 1, NPING
      pingbuf(ping_offset(i) + 1:ping_offset(i + 1)) = i
    end do
    call MPI_Irecv(ready_buf, 0, MPI_INTEGER, 1, READY_TAG, MPI_COMM_WORLD, ready_req IERR)
    call MPI_Irecv(turn_buf, 0, MPI_INTEGER, 1, DONE_TAG, MPI_COMM_WORLD, done_a_req IERR)
  end if
  call MPI_Barrier(MPI_COMM_WORLD IERR)
  if (counting) call start_counters()

  ! --- phase A ---------------------------------------------------------------
  if (rank == 0) then
    call MPI_Wait(ready_req, MPI_STATUS_IGNORE IERR)
    do i = 1, NPING
      call MPI_Send(pingbuf(ping_offset(i) + 1), ping_count(i), MPI_INTEGER, 1, PING_TAG, &
                    MPI_COMM_WORLD IERR)
    end do
    do kk = 0, K - 1
      late_buf(1) = kk
      call MPI_Send(late_buf, 1, MPI_INTEGER, 1, LATE_TAG + kk, MPI_COMM_WORLD IERR)
    end do
  else
    call MPI_Send(ready_buf, 0, MPI_INTEGER, 0, READY_TAG, MPI_COMM_WORLD IERR)
    call MPI_Waitall(NPING, ping_req, MPI_STATUSES_IGNORE IERR)
    do i = 1, NPING
      call expect(all(pingbuf(ping_offset(i) + 1:ping_offset(i + 1)) == i), 'ping payload')
    end do
    call MPI_Probe(0, LATE_TAG + K - 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE IERR)
    do kk = K - 1, 0, -1
      call MPI_Recv(late_buf, 1, MPI_INTEGER, 0, LATE_TAG + kk, MPI_COMM_WORLD, &
                    MPI_STATUS_IGNORE IERR)
      call expect(late_buf(1) == kk, 'late payload')
    end do
  end if
  if (counting) call checkpoint(1)
  call hand_over(done_a_req, go_b_req)

  ! --- phase B ---------------------------------------------------------------
  call MPI_Comm_dup(MPI_COMM_WORLD, dup IERR)
  call MPI_Comm_set_name(dup, 'fortran dup' IERR)
  do i = 1, NBCAST
    if (rank == 0) bcast_buf = [(10 * i + kk, kk = 1, 5)]
    if (rank == 1) bcast_buf = 0
    call MPI_Bcast(bcast_buf, 5, MPI_INTEGER, 0, MPI_COMM_WORLD IERR)
    call expect(all(bcast_buf == [(10 * i + kk, kk = 1, 5)]), 'bcast data')
  end do
  do i = 1, NALLRED
    sum_in = [rank + i, 10 * rank]
    call MPI_Allreduce(sum_in, sum_out, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD IERR)
    call expect(all(sum_out == [1 + 2 * i, 10]), 'allreduce sum')
  end do
  ! alltoallw: rank r sends r+j+1 integers to rank j, at byte displacements
  do i = 0, 1
    scounts(i + 1) = rank + i + 1
    rcounts(i + 1) = i + rank + 1
    types(i + 1) = MPI_INTEGER
  end do
  sdispls = [0, 4 * scounts(1)]
  rdispls = [0, 4 * rcounts(1)]
  offset = 0
  do i = 0, 1
    do kk = 1, scounts(i + 1)
      a2a_send(offset + kk) = 1000 * rank + 100 * i + kk
    end do
    offset = offset + scounts(i + 1)
  end do
  a2a_recv = -1
  call MPI_Alltoallw(a2a_send, scounts, sdispls, types, a2a_recv, rcounts, rdispls, types, &
                     MPI_COMM_WORLD IERR)
  offset = 0
  do i = 0, 1
    do kk = 1, rcounts(i + 1)
      call expect(a2a_recv(offset + kk) == 1000 * i + 100 * rank + kk, 'alltoallw data')
    end do
    offset = offset + rcounts(i + 1)
  end do
  ! one-sided: each rank puts NPUT integers into the other's window and gets NGET
  w = [(100 * rank + i, i = 1, NWIN)]
  origin = [(1000 * rank + i, i = 1, NPUT)]
  got = -1
  win_size = 4 * NWIN
  call MPI_Win_create(w, win_size, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win IERR)
  call MPI_Win_fence(0, win IERR)
  do i = 1, NPUT
    disp = i - 1
    call MPI_Put(origin(i), 1, MPI_INTEGER, other, disp, 1, MPI_INTEGER, win IERR)
  end do
  do i = 1, NGET
    disp = 4 + i
    call MPI_Get(got(i), 1, MPI_INTEGER, other, disp, 1, MPI_INTEGER, win IERR)
  end do
  call MPI_Win_fence(0, win IERR)
  call MPI_F_sync_reg(w)
  call MPI_F_sync_reg(got)
  call expect(all(w(1:NPUT) == [(1000 * other + i, i = 1, NPUT)]), 'put data')
  call expect(all(w(NPUT + 1:) == [(100 * rank + i, i = NPUT + 1, NWIN)]), 'window beyond the puts')
  call expect(all(got == [(100 * other + 5 + i, i = 1, NGET)]), 'get data')
  call MPI_Win_free(win IERR)
  ! an attribute and a group, read through the Fortran layer's own code
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, tag_ub, flag IERR)
  call expect(flag .and. tag_ub >= 32767, 'MPI_TAG_UB')
  if (rank == 0) print '(a, i0)', 'tag_ub ', tag_ub
  call MPI_Comm_group(dup, group IERR)
  call MPI_Group_size(group, group_size IERR)
  call expect(group_size == 2, 'group size')
  call MPI_Group_free(group IERR)
  ! an attribute of our own: keyval and attribute code of the Fortran layer
  extra_state = 0
  call MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, keyval, extra_state IERR)
  attr_val = 4242 + rank
  call MPI_Comm_set_attr(dup, keyval, attr_val IERR)
  attr_val = 0
  call MPI_Comm_get_attr(dup, keyval, attr_val, flag IERR)
  call expect(flag .and. attr_val == 4242 + rank, 'own attribute')
  call MPI_Comm_delete_attr(dup, keyval IERR)
  call MPI_Comm_free_keyval(keyval IERR)
  ! an error the Fortran layer raises itself (a string over
  ! MPI_MAX_ERROR_STRING) through MPI_COMM_WORLD's error handler
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN IERR)
  long_string = repeat('x', len(long_string))
  call MPI_Add_error_string(MPI_ERR_LASTCODE, long_string, err_code)
  call expect(err_code == MPI_ERR_ARG, 'error returned by the Fortran layer')
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL IERR)
  ! the receives of phase C, posted before its sends can start
  if (rank == 0) then
    call MPI_Irecv(ready_buf, 0, MPI_INTEGER, 1, READY_TAG, dup, dup_ready_req IERR)
    call MPI_Irecv(turn_buf, 0, MPI_INTEGER, 1, DONE_TAG, MPI_COMM_WORLD, done_c_req IERR)
  else
    call MPI_Irecv(turn_buf, 0, MPI_INTEGER, 0, GO_TAG, MPI_COMM_WORLD, go_end_req IERR)
    dup_buf = 0
    after_buf = 0
    call MPI_Irecv(dup_buf, 3, MPI_INTEGER, 0, ISEND_TAG, dup, req20 IERR)
    call MPI_Irecv(after_buf, 1, MPI_INTEGER, 0, AFTER_TAG, dup, req22 IERR)
  end if
  do i = 1, NBARRIER
    call MPI_Barrier(MPI_COMM_WORLD IERR)
  end do
  if (counting) call checkpoint(2)

  ! --- phase C, on the duplicate ---------------------------------------------
  if (counting) call start_bound()
  if (rank == 0) then
    call MPI_Wait(dup_ready_req, MPI_STATUS_IGNORE IERR)
    dup_buf = [7, 8, 9]
    call MPI_Isend(dup_buf, 3, MPI_INTEGER, 1, ISEND_TAG, dup, isend_req IERR)
    after_buf = 10
    call MPI_Send(after_buf, 1, MPI_INTEGER, 1, AFTER_TAG, dup IERR)
    call MPI_Wait(isend_req, MPI_STATUS_IGNORE IERR)
    do kk = 0, KD - 1
      dup_late(1:2 * kk + 1) = kk
      call MPI_Send(dup_late, 2 * kk + 1, MPI_INTEGER, 1, DUP_LATE_TAG + kk, dup IERR)
    end do
  else
    call MPI_Send(ready_buf, 0, MPI_INTEGER, 0, READY_TAG, dup IERR)
    call MPI_Wait(req22, MPI_STATUS_IGNORE IERR)
    ! matched in order: the Isend's eager message is in when the later one is
    call MPI_Test(req20, flag, MPI_STATUS_IGNORE IERR)
    call expect(flag, 'MPI_Test of the earlier message')
    call expect(all(dup_buf == [7, 8, 9]) .and. after_buf(1) == 10, 'duplicate payload')
    call MPI_Probe(0, DUP_LATE_TAG + KD - 1, dup, MPI_STATUS_IGNORE IERR)
    do kk = KD - 1, 0, -1
      dup_late = -1
      call MPI_Recv(dup_late, 2 * kk + 1, MPI_INTEGER, 0, DUP_LATE_TAG + kk, dup, &
                    MPI_STATUS_IGNORE IERR)
      call expect(all(dup_late(1:2 * kk + 1) == kk), 'late payload on the duplicate')
    end do
  end if
  if (counting) then
    call checkpoint(3)
    call stop_counters()
  end if
  call hand_over(done_c_req, go_end_req)
  if (counting) then
    ! the totals a finalize CSV must hold
    unit = output_unit
    if (predictions /= '') then
      write(path, '(2a, i0)') trim(predictions), '.', rank
      open(newunit=unit, file=path, status='replace', action='write')
    end if
    do c = 1, NC
      if (any(pred(c, :) == UNPREDICTED) .or. .not. counted(c)) cycle
      total = sum(pred(c, :))
      write(unit, '(a, i0, 1x, a, 1x, i0)') 'predict ', rank, trim(names(c)), total
    end do
    do c = 1, NB
      if (.not. counted(bound(c))) cycle
      write(unit, '(a, i0, 1x, a, 1x, i0)') 'predict_comm ', rank, trim(names(bound(c))), bpred(c)
    end do
    if (unit /= output_unit) close(unit)
  end if
  call MPI_Comm_free(dup IERR)
  deallocate(pingbuf)
  if (nfail == 0) then
    print '(a, i0, a)', 'rank ', rank, ': all checks passed'
  else
    print '(a, i0, a, i0, a)', 'rank ', rank, ': ', nfail, ' checks failed'
  end if
  call MPI_Finalize(IERR_ALONE)
  if (nfail /= 0) stop 1

contains

  ! Marks the counters of list (comma-separated names) not counted; ok is
  ! false for a name this program does not read.
  subroutine mark_not_counted(list, ok)
    character(len=*), intent(in) :: list
    logical, intent(out) :: ok
    integer :: first, last, k
    counted = .true.
    ok = .true.
    first = 1
    do while (first <= len_trim(list))
      last = index(list(first:), ',') + first - 2
      if (last < first - 1) last = len_trim(list)
      k = 1
      do while (k <= NC)
        if (names(k) == list(first:last)) exit
        k = k + 1
      end do
      if (k > NC) then
        print '(3a)', 'no counter ', list(first:last), ' in this program'
        ok = .false.
        return
      end if
      counted(k) = .false.
      first = last + 2
    end do
  end subroutine mark_not_counted

  ! Rank 1, done counting a phase, says so; rank 0 waits for that, then
  ! lets rank 1 go on.  Each message meets a receive posted a phase before.
  subroutine hand_over(done_req, go_req)
    HANDLE(MPI_Request), intent(inout) :: done_req, go_req
    if (rank == 1) then
      call MPI_Send(turn_buf, 0, MPI_INTEGER, 0, DONE_TAG, MPI_COMM_WORLD IERR)
      call MPI_Wait(go_req, MPI_STATUS_IGNORE IERR)
    else
      call MPI_Wait(done_req, MPI_STATUS_IGNORE IERR)
      call MPI_Send(turn_buf, 0, MPI_INTEGER, 1, GO_TAG, MPI_COMM_WORLD IERR)
    end if
  end subroutine hand_over

  ! The Open MPI libraries this process has loaded, from /proc/self/maps
  ! (links followed): which Fortran layer and libmpi really run.
  subroutine print_libraries()
    character(len=1024) :: line, seen(16)
    integer :: maps, ios, n, at, k
    n = 0
    open(newunit=maps, file='/proc/self/maps', action='read', status='old', iostat=ios)
    if (ios /= 0) return
    do
      read(maps, '(a)', iostat=ios) line
      if (ios /= 0) exit
      at = index(line, '/')
      if (at == 0 .or. index(line, '/libmpi') == 0) cycle
      if (any([(seen(k) == line(at:), k = 1, n)]) .or. n == size(seen)) cycle
      n = n + 1
      seen(n) = line(at:)
      print '(2a)', 'loaded ', trim(seen(n))
    end do
    close(maps)
  end subroutine print_libraries

  subroutine expect(condition, what)
    logical, intent(in) :: condition
    character(len=*), intent(in) :: what
    if (.not. condition) then
      nfail = nfail + 1
      print '(a, i0, a, a)', 'FAIL rank ', rank, ': ', what
    end if
  end subroutine expect

  subroutine papi_checked(what)
    character(len=*), intent(in) :: what
    if (check /= PAPI_OK) then
      print '(a, i0, a, a, a, i0)', 'rank ', rank, ': ', what, ' failed: PAPI error ', check
      call MPI_Abort(MPI_COMM_WORLD, 2 IERR)
    end if
  end subroutine papi_checked

  ! PAPI's event set and, with the helper, MPI_T handles on every counter.
  subroutine start_counters()
    check = PAPI_VER_CURRENT
    call PAPIF_library_init(check)
    if (check /= PAPI_VER_CURRENT) then
      print '(a, i0)', 'PAPIF_library_init: ', check
      call MPI_Abort(MPI_COMM_WORLD, 2 IERR)
    end if
    eventset = PAPI_NULL
    call PAPIF_create_eventset(eventset, check)
    call papi_checked('PAPIF_create_eventset')
    do c = 1, NC
      call PAPIF_add_named_event(eventset, 'sde:::ompi_spc::OMPI_SPC_' // trim(names(c)), check)
      call papi_checked('PAPIF_add_named_event ' // trim(names(c)))
    end do
    call PAPIF_start(eventset, check)
    call papi_checked('PAPIF_start')
    papi_last = 0
#ifdef SPC_HELPER
    do c = 1, NC
      call spc_counter_start(names(c), mpit(c), check)
      if (counted(c)) then
        call helper_ok('spc_counter_start ' // trim(names(c)))
      else
        call expect_no_variable(names(c), '')
      end if
    end do
    mpit_last = 0
    mpit_now = 0
#endif
  end subroutine start_counters

  subroutine start_bound()
#ifdef SPC_HELPER
    do c = 1, NB
      call spc_counter_start(names(bound(c)), mpit_bound(c), check, comm=HANDLE_VALUE(dup))
      if (counted(bound(c))) then
        call helper_ok('spc_counter_start ' // trim(names(bound(c))) // ' bound to the duplicate')
      else
        call expect_no_variable(names(bound(c)), ' bound to the duplicate')
      end if
    end do
#endif
  end subroutine start_bound

  ! Each counter's growth since the last checkpoint against this phase's prediction.
  subroutine checkpoint(phase)
    integer, intent(in) :: phase
#ifdef SPC_HELPER
    integer(8) :: value
#endif
    call PAPIF_read(eventset, papi_now, check)
    call papi_checked('PAPIF_read')
    do c = 1, NC
      if (.not. counted(c)) then                       ! PAPI's reading itself: -1
        call compare(phase, 'PAPI', names(c), papi_now(c), NOT_REGISTERED)
        cycle
      end if
      if (pred(c, phase) == UNPREDICTED) cycle
      call compare(phase, 'PAPI', names(c), papi_now(c) - papi_last(c), pred(c, phase))
    end do
    papi_last = papi_now
#ifdef SPC_HELPER
    do c = 1, NC
      if (.not. counted(c)) cycle
      call spc_counter_read(mpit(c), mpit_now(c), check)
      call helper_ok('spc_counter_read ' // trim(names(c)))
      if (pred(c, phase) == UNPREDICTED) cycle
      call compare(phase, 'MPI_T', names(c), mpit_now(c) - mpit_last(c), pred(c, phase))
    end do
    mpit_last = mpit_now
    if (phase == 3) then
      do c = 1, NB
        if (.not. counted(bound(c))) cycle
        call spc_counter_read(mpit_bound(c), value, check)
        call helper_ok('spc_counter_read bound')
        call compare(phase, 'MPI_T bound to the duplicate', names(bound(c)), value, bpred(c))
      end do
    end if
#endif
  end subroutine checkpoint

  subroutine compare(phase, how, name, got_value, predicted)
    integer, intent(in) :: phase
    character(len=*), intent(in) :: how, name
    integer(8), intent(in) :: got_value, predicted
    if (got_value /= predicted) then
      nfail = nfail + 1
      print '(a, i0, a, i0, 5a, i0, a, i0)', 'FAIL rank ', rank, ' phase ', phase, ' ', trim(name), &
        ' through ', how, ': ', got_value, ', predicted ', predicted
    end if
  end subroutine compare

  subroutine stop_counters()
    call PAPIF_stop(eventset, papi_now, check)
    call papi_checked('PAPIF_stop')
    call PAPIF_cleanup_eventset(eventset, check)
    call papi_checked('PAPIF_cleanup_eventset')
    call PAPIF_destroy_eventset(eventset, check)
    call papi_checked('PAPIF_destroy_eventset')
    call PAPIF_shutdown()
#ifdef SPC_HELPER
    ! before the duplicate is freed: its bound handles go with the session
    call spc_counters_finalize(check)
    call helper_ok('spc_counters_finalize')
#endif
  end subroutine stop_counters

#ifdef SPC_HELPER
  ! After spc_counter_start of a counter the job's PML does not count.
  subroutine expect_no_variable(name, how)
    character(len=*), intent(in) :: name, how
    character(len=512) :: message
    if (check /= SPC_COUNTER_UNKNOWN) then
      nfail = nfail + 1
      message = 'an MPI_T variable'
      if (check /= SPC_COUNTER_OK) call spc_counter_error(message)
      print '(a, i0, 5a)', 'FAIL rank ', rank, ': ', trim(name), how, &
        ', not counted by this PML, is offered: ', trim(message)
    end if
  end subroutine expect_no_variable

  subroutine helper_ok(what)
    character(len=*), intent(in) :: what
    character(len=512) :: message
    if (check /= SPC_COUNTER_OK) then
      call spc_counter_error(message)
      print '(a, i0, 4a)', 'rank ', rank, ': ', what, ': ', trim(message)
      call MPI_Abort(MPI_COMM_WORLD, 2 IERR)
    end if
  end subroutine helper_ok
#endif

end program counts
