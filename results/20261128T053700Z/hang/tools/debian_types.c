/* Debian's Open MPI 4.1.4 has no debug information; gdb reads ob1's state in
 * its ranks with the types of this object: Debian's own installed headers
 * (its opal_config.h, communicator.h, ...) plus ob1's private headers from
 * the 4.1.4 tarball, which Debian does not install.  Only types, no code. */
#include "ompi_config.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/pml/ob1/pml_ob1_comm.h"
#include "ompi/mca/pml/ob1/pml_ob1_recvfrag.h"
#include "ompi/mca/pml/ob1/pml_ob1_recvreq.h"
ompi_predefined_communicator_t *debian_types_world;
mca_pml_ob1_comm_t *debian_types_comm;
mca_pml_ob1_comm_proc_t *debian_types_proc;
mca_pml_ob1_recv_frag_t *debian_types_frag;
mca_pml_ob1_recv_request_t *debian_types_recvreq;
