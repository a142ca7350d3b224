# gdb -batch -p PID -x ob1_state.py : ob1's matching state of MPI_COMM_WORLD
# for every peer (needs a libmpi with debug information): the expected
# sequence number, the send sequence, and the out-of-sequence list
# (frags_cant_match) walked from its head, ranges in brackets.
import gdb


def seq(frag):
    return int(frag['hdr']['hdr_match']['hdr_seq'])


def walk(head):
    """The ring of ranges from the head: [(seq, [seqs of its range])]."""
    out, p, n = [], head, 0
    while True:
        r, rng = p['range'], []
        if int(r) != 0:
            q = r
            while True:
                rng.append(seq(q))
                q = q['super']['super']['opal_list_next'].cast(head.type)
                if int(q) == int(r) or len(rng) > 70000:
                    break
        out.append((seq(p), rng))
        p = p['super']['super']['opal_list_next'].cast(head.type)
        n += 1
        if int(p) == int(head) or n > 70000:
            return out


TYPES = "/work/hang/tools/debian_types.o"


def posted(lst, label):
    try:
        walk_posted(lst, label)
    except gdb.error as error:
        print("%s: not read: %s" % (label, error))


def walk_posted(lst, label):
    """A posted-receive list walked from its sentinel: its length, and
    whether the walk comes back to the sentinel (a list that does not is
    corrupt: match_incomming would loop in it forever)."""
    sentinel = lst['opal_list_sentinel'].address
    item = lst['opal_list_sentinel']['opal_list_next']
    seen, out = set(), []
    while int(item) != int(sentinel):
        if int(item) in seen or len(out) > 100000:
            print("%s: opal_list_length %d; CORRUPT: after %d items the walk meets item 0x%x again without the sentinel; sequences %s"
                  % (label, int(lst['opal_list_length']), len(out), int(item), out[:40]))
            return
        seen.add(int(item))
        req = item.cast(gdb.lookup_type("mca_pml_ob1_recv_request_t").pointer())
        out.append((int(req['req_recv']['req_base']['req_sequence']), int(req['req_recv']['req_base']['req_tag'])))
        item = item['opal_list_next']
    print("%s: opal_list_length %d, walked %d back to the sentinel; (sequence, tag) %s"
          % (label, int(lst['opal_list_length']), len(out), out[:20]))


def main():
    try:
        gdb.lookup_type("mca_pml_ob1_comm_t")
        print("ob1 types: the library's own debug information")
    except gdb.error:
        # Debian's libmpi has none: the types of Debian's headers (debian_types.c)
        gdb.execute("add-symbol-file %s 0" % TYPES, to_string=True)
        print("ob1 types: " + TYPES)
    comm = gdb.parse_and_eval("(mca_pml_ob1_comm_t *) ((ompi_predefined_communicator_t *) &ompi_mpi_comm_world)->comm.c_pml_comm")
    print("ob1 MPI_COMM_WORLD: recv_sequence %d, num_procs %d" % (int(comm['recv_sequence']), int(comm['num_procs'])))
    posted(comm['wild_receives'], "wild_receives")
    for i in range(int(comm['num_procs'])):
        proc = comm['procs'][i]
        if int(proc) == 0:
            continue
        expected = int(proc['expected_sequence'])
        head = proc['frags_cant_match']
        line = "peer %d: expected_sequence %d, send_sequence %d (as hdr_seq %d)" % (
            i, expected, int(proc['send_sequence']), int(proc['send_sequence']) & 0xffff)
        posted(proc['specific_receives'], "  specific_receives")
        if int(head) == 0:
            print(line + ", frags_cant_match empty")
            continue
        ring = walk(head)
        seqs = [s for h, rng in ring for s in [h] + rng]
        where = "absent"
        if expected in seqs:
            where = "the head" if ring[0][0] == expected else "in the list but NOT at the head"
        print(line + ", frags_cant_match: %d fragments in %d ranges, head %d; the expected %d is %s"
              % (len(seqs), len(ring), ring[0][0], expected, where))
        print("  ring from the head (first 12 ranges): " + ", ".join(
            "%d[%s]" % (h, "%d..%d, %d" % (rng[0], rng[-1], len(rng)) if rng else "")
            for h, rng in ring[:12]))
        nearest = min(seqs, key=lambda s: (s - expected) & 0xffff)
        print("  nearest to the expected sequence (mod 2^16): %d; smallest %d, largest %d" % (nearest, min(seqs), max(seqs)))


def vader():
    """vader's queues: what a sender holds back (pending_frags) and what a
    receiver has not read (its fifo, the fast boxes)."""
    c = gdb.parse_and_eval("mca_btl_vader_component")
    fifo = c['my_fifo']
    print("vader: pending_endpoints %d, pending_fragments %d, num_fbox_in_endpoints %d, my fifo head 0x%x tail 0x%x"
          % (int(c['pending_endpoints']['opal_list_length']), int(c['pending_fragments']['opal_list_length']),
             int(c['num_fbox_in_endpoints']), int(fifo['fifo_head']) & 0xffffffffffffffff,
             int(fifo['fifo_tail']) & 0xffffffffffffffff))
    for i in range(max(int(c['num_smp_procs']), 2)):  # num_smp_procs reads 0 here; 2 ranks
        ep = c['endpoints'][i]
        print("  endpoint %d: pending_frags %d, waiting %d, send_count %d, fbox_out start %d end %d seq %d, fbox_in start %d seq %d"
              % (i, int(ep['pending_frags']['opal_list_length']), int(ep['waiting']), int(ep['send_count']),
                 int(ep['fbox_out']['start']), int(ep['fbox_out']['end']), int(ep['fbox_out']['seq']),
                 int(ep['fbox_in']['start']), int(ep['fbox_in']['seq'])))


try:
    main()
except gdb.error as error:
    print("no ob1 state: %s" % error)
try:
    vader()
except gdb.error as error:
    print("no vader state: %s" % error)
