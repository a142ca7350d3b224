/* Prints the counter catalogue, one "NAME<TAB>DESCRIPTION" line per counter,
 * so that scripts compare against the catalogue itself, not a copy of it. */
#include <stdio.h>

#include "spc/spc.h"

int main(void)
{
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        printf("%s\t%s\n", spc_counters[id].name, spc_counters[id].description);
    }
    return 0;
}
