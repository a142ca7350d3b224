// Enable control (reference counted) and the mpi_spc_attach parser.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <mutex>

#include "internal.hpp"

namespace {

std::mutex enable_mutex;  // orders reference changes with flag changes
unsigned enable_refs[OMPI_SPC_NUM_COUNTERS];
unsigned switch_refs[SPC_NUM_SWITCHES];  // the same for switches

bool valid_id(int id) { return id >= 0 && id < OMPI_SPC_NUM_COUNTERS; }

void set_flag(int id, bool on) { __atomic_store_n(&spc_flags_.counters[id], on ? 1 : 0, __ATOMIC_RELAXED); }

std::string_view trim(std::string_view text)
{
    auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
    while (!text.empty() && space(text.front())) {
        text.remove_prefix(1);
    }
    while (!text.empty() && space(text.back())) {
        text.remove_suffix(1);
    }
    return text;
}

std::string upper(std::string_view text)
{
    std::string out(text);
    for (char &c : out) {
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return out;
}

size_t edit_distance(std::string_view a, std::string_view b)
{
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) {
        row[j] = j;
    }
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = above;
        }
    }
    return row[b.size()];
}

// The closest counter or category name, if it is close enough to be a typo.
std::string suggestion(std::string_view unknown)
{
    std::string wanted = upper(unknown);
    std::string best;
    size_t best_distance = 3;
    auto consider = [&](std::string_view name) {
        size_t d = edit_distance(wanted, upper(name));
        if (d < best_distance) {
            best_distance = d;
            best = name;
        }
    };
    for (const spc_counter_info &counter : spc_counter_infos) {
        consider(counter.name + std::strlen(SPC_COUNTER_PREFIX));
    }
    for (const spc_category_info &category : spc_category_infos) {
        consider(category.name);
    }
    return best;
}

std::string valid_choices()
{
    std::string text = "Valid choices are \"all\"; a category: ";
    for (int id = 0; id < SPC_NUM_CATEGORIES; ++id) {
        text += (id ? ", " : "") + std::string(spc_category_infos[id].name);
    }
    text += "; or a counter, with or without the OMPI_SPC_ prefix: ";
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        text += (id ? ", " : "") + std::string(spc_counter_infos[id].name + std::strlen(SPC_COUNTER_PREFIX));
    }
    return text;
}

}  // namespace

namespace spc {

AttachList parse_attach_list(std::string_view list)
{
    AttachList result;
    std::vector<bool> chosen(OMPI_SPC_NUM_COUNTERS, false);
    std::vector<bool> named(SPC_NUM_CATEGORIES, false);
    while (!list.empty()) {
        size_t comma = list.find(',');
        std::string_view entry = trim(list.substr(0, comma));
        list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
        if (entry.empty()) {
            continue;  // "a,,b" and a trailing comma name nothing
        }
        std::string name(entry);
        int counter = spc_counter_find(name.c_str());
        int category = counter < 0 ? spc_category_find(name.c_str()) : -1;
        if (counter >= 0) {
            chosen[counter] = true;
        } else if (category >= 0 || upper(name) == "ALL") {
            if (category >= 0) {
                named[category] = true;
            }
            int root = category >= 0 ? category : SPC_CATEGORY_SPC;
            for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
                if (category_contains(root, spc_counter_infos[id].category)) {
                    chosen[id] = true;
                }
            }
        } else {
            result.unknown.push_back(name);
        }
    }
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        if (chosen[id]) {
            result.counters.push_back(id);
        }
    }
    for (int id = 0; id < SPC_NUM_CATEGORIES; ++id) {
        if (named[id]) {
            result.categories.push_back(id);
        }
    }
    if (!result.unknown.empty()) {
        result.message = "mpi_spc_attach: unknown counter or category ";
        for (size_t i = 0; i < result.unknown.size(); ++i) {
            const std::string &name = result.unknown[i];
            result.message += (i ? ", \"" : "\"") + name + "\"";
            std::string close = suggestion(name);
            if (!close.empty()) {
                result.message += " (did you mean \"" + close + "\"?)";
            }
        }
        result.message += "; the other names still apply. " + valid_choices() + ".";
    }
    return result;
}

}  // namespace spc


namespace {

bool valid_key(int key) { return key >= 0 && key < SPC_NUM_SWITCHES; }

bool is_switch_site(int id) { return id <= SPC_SWITCH_SITE_ID(0) && valid_key(SPC_SWITCH_SITE_ID(0) - id); }

bool consumer_on(int id)
{
    return is_switch_site(id) ? spc_flags_.switches[SPC_SWITCH_SITE_ID(0) - id] != 0
                              : spc_flags_.counters[id] != 0;
}

struct Hook {
    int count = 0;
    int consumers[SPC_MAX_HOOK_CONSUMERS];
};
Hook hooks[SPC_MAX_HOOKS];  // changed with the enable lock held
// spc_hook_all_counters, spc_hook_timers_alone: read by the patcher only,
// so not in spc_flags_.
std::atomic<bool> hook_all_counters[SPC_MAX_HOOKS];
std::atomic<bool> hook_timers_alone[SPC_MAX_HOOKS];

bool is_timer(int id) { return valid_id(id) && spc_counter_infos[id].kind == SPC_KIND_TIMER; }

// Sets hook's flags to what its consumers say and, if they changed (or
// always), rewrites its sites; the enable lock is held.
void follow_consumers(int hook, bool always)
{
    const Hook &h = hooks[hook];
    const int *const begin = h.consumers, *const end = h.consumers + h.count;
    const bool on = std::any_of(begin, end, consumer_on);
    const bool switches = std::any_of(begin, end, [](int id) { return is_switch_site(id) && consumer_on(id); });
    const bool counters = std::any_of(begin, end, [](int id) { return !is_switch_site(id); });
    const bool all_counters = counters && !switches &&
                              std::all_of(begin, end, [](int id) { return is_switch_site(id) || consumer_on(id); });
    const bool timers_alone = on && std::all_of(begin, end, [](int id) { return is_timer(id) || !consumer_on(id); });
    const bool switches_changed = switches != (spc_flags_.hook_switches[hook] != 0);
    // Before the sites change, and so seen by every thread that jumps.
    __atomic_store_n(&spc_flags_.hook_switches[hook], switches ? 1 : 0, __ATOMIC_RELAXED);
    if (always || switches_changed || on != (spc_flags_.hooks[hook] != 0) ||
        all_counters != hook_all_counters[hook].load(std::memory_order_relaxed) ||
        timers_alone != hook_timers_alone[hook].load(std::memory_order_relaxed)) {
        __atomic_store_n(&spc_flags_.hooks[hook], on ? 1 : 0, __ATOMIC_RELAXED);
        hook_all_counters[hook].store(all_counters, std::memory_order_relaxed);
        hook_timers_alone[hook].store(timers_alone, std::memory_order_relaxed);
        spc::sites_switch(SPC_HOOK_SITE_ID(hook));
    }
}

// A consumer (counter id or switch site id) was turned on or off: the hooks
// it serves follow, after its own flag and sites.
void follow_consumer(int id)
{
    for (int hook = 0; hook < SPC_MAX_HOOKS; ++hook) {
        const Hook &h = hooks[hook];
        if (std::find(h.consumers, h.consumers + h.count, id) != h.consumers + h.count) {
            follow_consumers(hook, false);
        }
    }
}

// One more (on) or one fewer (off) reference in refs; flip(state) runs, with
// the enable lock held, when refs leaves or reaches zero.
template <typename Flip>
int count_reference(unsigned &refs, bool on, Flip flip)
{
    std::lock_guard<std::mutex> lock(enable_mutex);
    if (on) {
        if (refs++ == 0) {
            flip(true);
        }
        return SPC_SUCCESS;
    }
    if (refs == 0) {
        return SPC_ERR_NOT_ENABLED;
    }
    if (--refs == 0) {
        flip(false);
    }
    return SPC_SUCCESS;
}

int count_counter_reference(int id, bool on)
{
    if (!valid_id(id)) {
        return SPC_ERR_BAD_ID;
    }
    return count_reference(enable_refs[id], on, [id](bool state) {
        set_flag(id, state);
        spc::sites_switch(id);
        follow_consumer(id);
    });
}

int count_switch_reference(int key, bool on)
{
    if (!valid_key(key)) {
        return SPC_ERR_BAD_ID;
    }
    return count_reference(switch_refs[key], on, [key](bool state) {
        __atomic_store_n(&spc_flags_.switches[key], state ? 1 : 0, __ATOMIC_RELAXED);
        spc::sites_switch(SPC_SWITCH_SITE_ID(key));
        follow_consumer(SPC_SWITCH_SITE_ID(key));
    });
}

}  // namespace

namespace spc {

void hooks_follow_sampling()
{
    std::lock_guard<std::mutex> lock(enable_mutex);
    for (int hook = 0; hook < SPC_MAX_HOOKS; ++hook) {
        if (hook_all_counters[hook].load(std::memory_order_relaxed) ||
            hook_timers_alone[hook].load(std::memory_order_relaxed)) {
            sites_switch(SPC_HOOK_SITE_ID(hook));
        }
    }
}

}  // namespace spc

extern "C" {

int spc_counter_enable(int id) { return count_counter_reference(id, true); }
int spc_counter_disable(int id) { return count_counter_reference(id, false); }
int spc_switch_on(int key) { return count_switch_reference(key, true); }
int spc_switch_off(int key) { return count_switch_reference(key, false); }

int spc_switch_is_on(int key) { return valid_key(key) && __atomic_load_n(&spc_flags_.switches[key], __ATOMIC_RELAXED); }

int spc_hook_define(int hook, const int *consumers, int count)
{
    if (hook < 0 || hook >= SPC_MAX_HOOKS || count < 0 || count > SPC_MAX_HOOK_CONSUMERS ||
        (count > 0 && consumers == nullptr)) {
        return SPC_ERR_BAD_ID;
    }
    for (int i = 0; i < count; ++i) {
        if (!valid_id(consumers[i]) && !is_switch_site(consumers[i])) {
            return SPC_ERR_BAD_ID;
        }
    }
    std::lock_guard<std::mutex> lock(enable_mutex);
    Hook &h = hooks[hook];
    h.count = count;
    std::copy(consumers, consumers + count, h.consumers);
    follow_consumers(hook, true);
    return SPC_SUCCESS;
}

int spc_hook_is_on(int hook)
{
    return hook >= 0 && hook < SPC_MAX_HOOKS && __atomic_load_n(&spc_flags_.hooks[hook], __ATOMIC_RELAXED);
}

int spc_hook_switches_on(int hook)
{
    return hook >= 0 && hook < SPC_MAX_HOOKS &&
           __atomic_load_n(&spc_flags_.hook_switches[hook], __ATOMIC_RELAXED);
}

int spc_hook_all_counters(int hook)
{
    return hook >= 0 && hook < SPC_MAX_HOOKS && hook_all_counters[hook].load(std::memory_order_relaxed);
}

int spc_hook_timers_alone(int hook)
{
    return hook >= 0 && hook < SPC_MAX_HOOKS && hook_timers_alone[hook].load(std::memory_order_relaxed);
}

int spc_counter_is_enabled(int id)
{
    return valid_id(id) && __atomic_load_n(&spc_flags_.counters[id], __ATOMIC_RELAXED);
}

int spc_attach_parse(const char *text, spc_attach_list *list, char *message, size_t message_size)
{
    spc::AttachList parsed = spc::parse_attach_list(text ? text : "");
    if (list != nullptr) {
        *list = spc_attach_list{};
        for (int id : parsed.counters) {
            list->counters[id] = 1;
        }
        for (int id : parsed.categories) {
            list->categories[id] = 1;
        }
    }
    if (message != nullptr && message_size > 0) {
        size_t n = std::min(parsed.message.size(), message_size - 1);
        std::memcpy(message, parsed.message.data(), n);
        message[n] = '\0';
    }
    return static_cast<int>(parsed.unknown.size());
}

const char *spc_attach_help(void)
{
    static const std::string help =
        "Counters to turn on from MPI_Init (default: none; an MPI_T handle or PAPI also turns a "
        "counter on while it reads it): a comma-separated list, in any case, of names. " +
        valid_choices() + ". The category prefix spc_ is optional. A counter's MPI_T performance "
        "variable is " SPC_PVAR_PREFIX SPC_COUNTER_PREFIX "<NAME>. An unknown name is reported once "
        "at MPI_Init with the closest valid one; the other names still apply.";
    return help.c_str();
}

int spc_attach(const char *text, spc_attach_list *list, char *message, size_t message_size)
{
    spc_attach_list parsed;
    int unknown = spc_attach_parse(text, &parsed, message, message_size);
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        if (parsed.counters[id]) {
            spc_counter_enable(id);
        }
    }
    if (list != nullptr) {
        *list = parsed;
    }
    return unknown;
}

}  // extern "C"
