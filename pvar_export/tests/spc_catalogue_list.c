/* Prints the counter catalogue, one "NAME<TAB>DESCRIPTION" line per counter,
 * so that scripts compare against the catalogue itself, not a copy of it;
 * with --papi-events, every PAPI event (the counters, then each histogram
 * bin); with --papi-prefix, the prefix of the PAPI event names. */
#include <stdio.h>
#include <string.h>

#include "spc/spc.h"

int main(int argc, char **argv)
{
    if (2 == argc && 0 == strcmp(argv[1], "--papi-prefix")) {
        puts(SPC_PAPI_EVENT_PREFIX);
        return 0;
    }
    const int papi_events = 2 == argc && 0 == strcmp(argv[1], "--papi-events");
    if (1 != argc && !papi_events) {
        fputs("usage: spc_catalogue_list [--papi-events | --papi-prefix]\n", stderr);
        return 2;
    }
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        printf("%s\t%s\n", spc_counter_infos[id].name, spc_counter_infos[id].description);
    }
    for (int id = 0; papi_events && id < SPC_NUM_HISTOGRAMS; ++id) {
        for (int bin = 0; bin < SPC_HISTOGRAM_BINS; ++bin) {
            char name[64], description[512];
            spc_histogram_bin_name(id, bin, name, sizeof name);
            spc_histogram_bin_description(id, bin, description, sizeof description);
            printf("%s\t%s\n", name, description);
        }
    }
    return 0;
}
