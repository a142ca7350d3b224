// The catalogue tables and name lookups, generated from catalogue.def.
#include "internal.hpp"

#include <strings.h>

#include <cstring>

extern "C" {

const spc_category_info spc_categories[SPC_NUM_CATEGORIES] = {
#define SPC_CATEGORY(id, parent, description) {#id, description, SPC_CATEGORY_##parent},
#define SPC_CALL(name, category, function)
#define SPC_STAT(name, kind, unit, category, verbosity, description)
#define SPC_WATERMARK(name, level, category, verbosity, description)
#include "spc/catalogue.def"
};

const spc_counter_info spc_counters[OMPI_SPC_NUM_COUNTERS] = {
#define SPC_CATEGORY(id, parent, description)
#define SPC_CALL(name, category, function)                                          \
    {"OMPI_SPC_" #name, "The number of times " function " was called.", SPC_KIND_COUNTER, \
     SPC_UNIT_CALLS, SPC_CATEGORY_##category, SPC_VERBOSITY_USER_BASIC, -1},
#define SPC_STAT(name, kind, unit, category, verbosity, description)               \
    {"OMPI_SPC_" #name, description, SPC_KIND_##kind, SPC_UNIT_##unit,             \
     SPC_CATEGORY_##category, SPC_VERBOSITY_##verbosity, -1},
#define SPC_WATERMARK(name, level, category, verbosity, description)               \
    {"OMPI_SPC_" #name, description, SPC_KIND_HIGHWATERMARK, SPC_UNIT_MESSAGES,    \
     SPC_CATEGORY_##category, SPC_VERBOSITY_##verbosity, OMPI_SPC_##level},
#include "spc/catalogue.def"
};

int spc_counter_find(const char *name)
{
    if (name == nullptr) {
        return -1;
    }
    constexpr std::string_view prefix = "OMPI_SPC_";
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        const char *full = spc_counters[id].name;
        if (strcasecmp(name, full) == 0 || strcasecmp(name, full + prefix.size()) == 0) {
            return id;
        }
    }
    return -1;
}

int spc_category_find(const char *name)
{
    if (name == nullptr) {
        return -1;
    }
    constexpr std::string_view prefix = "spc_";
    for (int id = 0; id < SPC_NUM_CATEGORIES; ++id) {
        const char *full = spc_categories[id].name;
        if (strcasecmp(name, full) == 0 ||
            (std::strlen(full) > prefix.size() && strcasecmp(name, full + prefix.size()) == 0)) {
            return id;
        }
    }
    return -1;
}

}  // extern "C"

namespace spc {

bool category_contains(int ancestor, int category)
{
    for (;;) {
        if (category == ancestor) {
            return true;
        }
        int parent = spc_categories[category].parent;
        if (parent == category) {
            return false;
        }
        category = parent;
    }
}

}  // namespace spc
