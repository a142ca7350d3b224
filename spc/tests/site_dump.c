/* Prints, as hex, the bytes functions of a library hold once it is loaded
 * (after its sites were patched), for check_fast_path.py to disassemble.
 * usage: site_dump LIBRARY NAME:SIZE... */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fputs("usage: site_dump LIBRARY NAME:SIZE...\n", stderr);
        return 2;
    }
    void *library = dlopen(argv[1], RTLD_NOW);
    if (library == NULL) {
        fprintf(stderr, "site_dump: %s\n", dlerror());
        return 2;
    }
    for (int i = 2; i < argc; ++i) {
        char name[256];
        unsigned size;
        if (sscanf(argv[i], "%255[^:]:%u", name, &size) != 2) {
            fprintf(stderr, "site_dump: not NAME:SIZE: %s\n", argv[i]);
            return 2;
        }
        const unsigned char *code = dlsym(library, name);
        if (code == NULL) {
            fprintf(stderr, "site_dump: no %s in %s\n", name, argv[1]);
            return 2;
        }
        printf("%s ", name);
        for (unsigned k = 0; k < size; ++k) {
            printf("%02x", code[k]);
        }
        putchar('\n');
    }
    return 0;
}
