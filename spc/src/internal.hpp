// Declarations shared by the C++ sources of libspc (not installed).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "spc/spc.h"

namespace spc {

// True if category is ancestor or lies below it.
bool category_contains(int ancestor, int category);

struct AttachList {
    std::vector<int> counters;          // ascending, each once
    std::vector<int> categories;        // named themselves ("all" names none); ascending, each once
    std::vector<std::string> unknown;   // names as written, in order
    std::string message;                // empty when unknown is empty
};

// Parses an mpi_spc_attach string; enables nothing.
AttachList parse_attach_list(std::string_view list);

// Timer ticks to microseconds, exact over any uint64_t tick count.
uint64_t ticks_to_microseconds(uint64_t ticks, uint64_t ticks_per_second);

// Rewrites the sites of counter id (or of a switch, id = SPC_SWITCH_SITE_ID(key))
// to what its flag now says (sites.cc); called with the enable lock held,
// after the flag changed.
void sites_switch(int id);

// Timer sampling went from 1 to above or back: the sites of hooks whose
// every counter is on move to the copy of their code for it.
void hooks_follow_sampling();

// Seed of a new thread block's random gaps.
uint64_t random_seed();

}  // namespace spc
