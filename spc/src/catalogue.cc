// The catalogue tables and name lookups, generated from catalogue.def.
#include "internal.hpp"

#include <strings.h>

#include <string_view>

namespace {

// Index of the entry whose name is name, compared in any case, with or
// without the given prefix; -1 if none.
template <typename Info, size_t N>
int find_name(const Info (&table)[N], const char *name, std::string_view prefix)
{
    if (name == nullptr) {
        return -1;
    }
    for (size_t i = 0; i < N; ++i) {
        std::string_view full = table[i].name;
        bool prefixed = full.size() > prefix.size() && full.substr(0, prefix.size()) == prefix;
        if (strcasecmp(name, table[i].name) == 0 ||
            (prefixed && strcasecmp(name, table[i].name + prefix.size()) == 0)) {
            return static_cast<int>(i);
        }
    }
    return -1;
}

}  // namespace

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

int spc_counter_find(const char *name) { return find_name(spc_counters, name, "OMPI_SPC_"); }

int spc_category_find(const char *name) { return find_name(spc_categories, name, "spc_"); }

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
