! A known traffic for pmpi_count itself (run_apps.py predicts every count):
! Fortran sends, receives and completions, statuses ignored and not, a send
! to MPI_PROC_NULL, collectives and MPI_Wtime, on 2 ranks.
program known_traffic
  use mpi
  implicit none
  integer :: ierr, rank, req(2), idx, ibuf(100), st(MPI_STATUS_SIZE), x, y, s(6), r(6)
  double precision :: d(5), t0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  ibuf = 0; d = 1.0d0; s = 0; x = rank
  if (rank == 0) then
    call MPI_Send(ibuf, 10, MPI_INTEGER, 1, 1, MPI_COMM_WORLD, ierr)
    call MPI_Isend(ibuf, 20, MPI_INTEGER, 1, 2, MPI_COMM_WORLD, req(1), ierr)
    call MPI_Wait(req(1), MPI_STATUS_IGNORE, ierr)
    call MPI_Send(d, 5, MPI_DOUBLE_PRECISION, 1, 3, MPI_COMM_WORLD, ierr)
    call MPI_Send(d, 5, MPI_DOUBLE_PRECISION, MPI_PROC_NULL, 3, MPI_COMM_WORLD, ierr)
    call MPI_Ssend(ibuf, 3, MPI_INTEGER, 1, 4, MPI_COMM_WORLD, ierr)
    call MPI_Sendrecv(s, 4, MPI_INTEGER, 1, 5, r, 6, MPI_INTEGER, 1, 5, MPI_COMM_WORLD, st, ierr)
  else
    call MPI_Recv(ibuf, 100, MPI_INTEGER, 0, 1, MPI_COMM_WORLD, st, ierr)
    call MPI_Irecv(ibuf, 100, MPI_INTEGER, 0, 2, MPI_COMM_WORLD, req(1), ierr)
    call MPI_Irecv(d, 5, MPI_DOUBLE_PRECISION, 0, 3, MPI_COMM_WORLD, req(2), ierr)
    call MPI_Waitall(2, req, MPI_STATUSES_IGNORE, ierr)
    call MPI_Irecv(ibuf, 100, MPI_INTEGER, 0, 4, MPI_COMM_WORLD, req(1), ierr)
    call MPI_Waitany(1, req, idx, st, ierr)
    call MPI_Sendrecv(s, 6, MPI_INTEGER, 0, 5, r, 6, MPI_INTEGER, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  end if
  call MPI_Allreduce(x, y, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Bcast(y, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  t0 = MPI_Wtime()
  call MPI_Finalize(ierr)
end program
