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

// "spc_<id>" in lower case, or "spc" for the root, built at compile time.
template <size_t N>
struct CategoryName {
    char text[N + 4] = {};
    constexpr CategoryName(const char (&id)[N], bool root)
    {
        size_t out = 0;
        for (char c : {'s', 'p', 'c', '_'}) {
            text[out++] = c;
        }
        if (root) {
            text[--out] = '\0';
            return;
        }
        for (size_t i = 0; i + 1 < N; ++i) {
            text[out++] = id[i] >= 'A' && id[i] <= 'Z' ? static_cast<char>(id[i] - 'A' + 'a') : id[i];
        }
    }
};

#define SPC_CATEGORY(id, parent, description) \
    constexpr CategoryName<sizeof #id> category_name_##id{#id, SPC_CATEGORY_##id == SPC_CATEGORY_##parent};
#include "spc/catalogue.def"

// Each counter's unit, so that a watermark can take its level's.
constexpr spc_unit units[] = {
#define SPC_CALL(name, category, function) SPC_UNIT_CALLS,
#define SPC_STAT(name, kind, unit, category, verbosity, description) SPC_UNIT_##unit,
#define SPC_WATERMARK(name, level, category, verbosity, description) SPC_UNIT_CALLS,
#include "spc/catalogue.def"
};

}  // namespace

extern "C" {

const spc_category_info spc_category_infos[SPC_NUM_CATEGORIES] = {
#define SPC_CATEGORY(id, parent, description) \
    {category_name_##id.text, description, SPC_CATEGORY_##parent},
#include "spc/catalogue.def"
};

const spc_counter_info spc_counter_infos[OMPI_SPC_NUM_COUNTERS] = {
#define SPC_CALL(name, category, function)                                          \
    {SPC_COUNTER_PREFIX #name, "The number of times " function " was called.", SPC_KIND_COUNTER, \
     SPC_UNIT_CALLS, SPC_CATEGORY_##category, SPC_VERBOSITY_USER_BASIC, -1},
#define SPC_STAT(name, kind, unit, category, verbosity, description)               \
    {SPC_COUNTER_PREFIX #name, description, SPC_KIND_##kind, SPC_UNIT_##unit,             \
     SPC_CATEGORY_##category, SPC_VERBOSITY_##verbosity, -1},
#define SPC_WATERMARK(name, level, category, verbosity, description)               \
    {SPC_COUNTER_PREFIX #name, description, SPC_KIND_HIGHWATERMARK, units[OMPI_SPC_##level], \
     SPC_CATEGORY_##category, SPC_VERBOSITY_##verbosity, OMPI_SPC_##level},
#include "spc/catalogue.def"
};

const spc_comm_counter_info spc_comm_counter_infos[SPC_NUM_COMM_COUNTERS] = {
#define SPC_PER_COMM(name, where) {OMPI_SPC_##name, where},
#include "spc/catalogue.def"
};

const spc_peer_counter_info spc_peer_counter_infos[SPC_NUM_PEER_COUNTERS] = {
#define SPC_PER_PEER(name, kind, unit, description) \
    {SPC_COUNTER_PREFIX #name, description, SPC_KIND_##kind, SPC_UNIT_##unit, 0},
#define SPC_PER_WIN_PEER(name, kind, unit, description) \
    {SPC_COUNTER_PREFIX #name, description, SPC_KIND_##kind, SPC_UNIT_##unit, 1},
#include "spc/catalogue.def"
};

static_assert(SPC_PEER_INTERNAL_OF(SPC_PEER_MESSAGES_SENT) == SPC_PEER_INTERNAL_MESSAGES_SENT &&
                  SPC_PEER_INTERNAL_OF(SPC_PEER_BYTES_SENT) == SPC_PEER_INTERNAL_BYTES_SENT &&
                  SPC_PEER_INTERNAL_OF(SPC_PEER_MESSAGES_RECEIVED) == SPC_PEER_INTERNAL_MESSAGES_RECEIVED &&
                  SPC_PEER_INTERNAL_OF(SPC_PEER_BYTES_RECEIVED) == SPC_PEER_INTERNAL_BYTES_RECEIVED,
              "the internal per-peer rows follow the user's in the same order");
static_assert(SPC_PEER_ONE_SIDED_OF(SPC_PEER_MESSAGES_SENT) == SPC_PEER_ONE_SIDED_MESSAGES_SENT &&
                  SPC_PEER_ONE_SIDED_OF(SPC_PEER_BYTES_SENT) == SPC_PEER_ONE_SIDED_BYTES_SENT &&
                  SPC_PEER_ONE_SIDED_OF(SPC_PEER_MESSAGES_RECEIVED) == SPC_PEER_ONE_SIDED_MESSAGES_RECEIVED &&
                  SPC_PEER_ONE_SIDED_OF(SPC_PEER_BYTES_RECEIVED) == SPC_PEER_ONE_SIDED_BYTES_RECEIVED,
              "the one-sided per-peer rows follow the internal ones in the user's order");

const spc_histogram_info spc_histogram_infos[SPC_NUM_HISTOGRAMS] = {
#define SPC_HISTOGRAM(name, description) {SPC_COUNTER_PREFIX #name, description},
#include "spc/catalogue.def"
};

int spc_comm_counter_find(const char *name)
{
    int counter = spc_counter_find(name);
    for (int id = 0; counter >= 0 && id < SPC_NUM_COMM_COUNTERS; ++id) {
        if (spc_comm_counter_infos[id].counter == counter) {
            return id;
        }
    }
    return -1;
}

const char *spc_unit_name(spc_unit unit)
{
    switch (unit) {
    case SPC_UNIT_CALLS: return "calls";
    case SPC_UNIT_BYTES: return "bytes";
    case SPC_UNIT_MESSAGES: return "messages";
    case SPC_UNIT_MICROSECONDS: return "microseconds";
    }
    return "";
}

int spc_counter_find(const char *name) { return find_name(spc_counter_infos, name, SPC_COUNTER_PREFIX); }

int spc_category_find(const char *name) { return find_name(spc_category_infos, name, "spc_"); }

}  // extern "C"

namespace spc {

bool category_contains(int ancestor, int category)
{
    for (;;) {
        if (category == ancestor) {
            return true;
        }
        int parent = spc_category_infos[category].parent;
        if (parent == category) {
            return false;
        }
        category = parent;
    }
}

}  // namespace spc
