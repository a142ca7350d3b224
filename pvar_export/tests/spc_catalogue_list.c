/* Prints the counter catalogue, one "NAME<TAB>DESCRIPTION" line per counter,
 * so that scripts compare against the catalogue itself, not a copy of it;
 * with --papi-prefix, the prefix of the counters' PAPI event names. */
#include <stdio.h>
#include <string.h>

#include "spc/spc.h"

int main(int argc, char **argv)
{
    if (2 == argc && 0 == strcmp(argv[1], "--papi-prefix")) {
        puts(SPC_PAPI_EVENT_PREFIX);
        return 0;
    }
    if (1 != argc) {
        fputs("usage: spc_catalogue_list [--papi-prefix]\n", stderr);
        return 2;
    }
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        printf("%s\t%s\n", spc_counter_infos[id].name, spc_counter_infos[id].description);
    }
    return 0;
}
