// Patched sites: each update site is a 5-byte instruction that is a jump to
// its update code while one of its counters is on and a 5-byte no-op while
// they are off (a site at a function's entry: a jump to the function's plain
// code), rewritten in place as counters are turned on and off.
//
// Why rewriting code that other threads may be running is safe: the
// Linux kernel's protocol for the same problem (text_poke_bp,
// arch/x86/kernel/alternative.c).  A site's bytes change in three steps,
// and after each every thread of the process executes a core-serialising
// instruction (membarrier MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE), so no
// core runs a stale or half-written copy:
//   1. the first byte becomes int3;
//   2. bytes 1-4 become the new instruction's tail;
//   3. the first byte becomes the new opcode.
// A thread that reaches the site in between executes int3; our SIGTRAP
// handler sees that the trap address is a site and sends the thread back to
// the site's first byte, so it runs the site again, finally the new
// instruction (old and new are both right while a counter is being turned
// on or off).  Only whole instructions at the site's own address ever
// change; as in the kernel, a site needs no alignment: no thread runs its
// bytes 1-4 while they change, and its first byte changes in one store.
//
// Pages are made writable only for the patch (read-write-execute, since
// other threads may be running code on them) and restored to read-execute.
// Where that is refused, membarrier is missing, SPC_SITES=flag is set, or
// the CPU is not x86-64, sites stay as compiled: a jump to the update code,
// which tests the counter's flag (the "flag kind").
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <linux/membarrier.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "internal.hpp"

#if SPC_SITES_PATCHED  // x86-64: the rest of the file is the patching

namespace {

constexpr unsigned char kNop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
constexpr unsigned char kJmp = 0xe9, kInt3 = 0xcc;
constexpr int kMaxTables = 64;

struct Table {
    std::atomic<const spc_site *> begin{nullptr};
    std::atomic<const spc_site *> end{nullptr};
    int registrations = 0;   // files of the link unit that registered it
    bool patchable = false;  // false: its sites stay in the flag kind
};

// Read lock-free by the trap handler; changed under `mutex`.
Table tables[kMaxTables];
std::mutex mutex;
struct sigaction previous_trap_action;

unsigned char *address(const int32_t *relative)
{
    return reinterpret_cast<unsigned char *>(const_cast<int32_t *>(relative)) + *relative;
}

bool verbose()
{
    const char *value = std::getenv("SPC_VERBOSE");
    return value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0;
}

bool is_site(const unsigned char *at)
{
    for (const Table &table : tables) {
        const spc_site *end = table.end.load(std::memory_order_acquire);
        for (const spc_site *site = table.begin.load(std::memory_order_acquire); site && site < end;
             ++site) {
            if (address(&site->at) == at) {
                return true;
            }
        }
    }
    return false;
}

// A thread that met a site in the middle of a patch runs it again.
void on_trap(int signal, siginfo_t *info, void *context)
{
    auto *registers = static_cast<ucontext_t *>(context)->uc_mcontext.gregs;
    auto *trap = reinterpret_cast<unsigned char *>(registers[REG_RIP]) - 1;
    if (info->si_code == SI_KERNEL && is_site(trap)) {
        registers[REG_RIP] = reinterpret_cast<greg_t>(trap);
        return;
    }
    // Not ours: what would have happened without us.
    if (previous_trap_action.sa_flags & SA_SIGINFO) {
        previous_trap_action.sa_sigaction(signal, info, context);
    } else if (previous_trap_action.sa_handler == SIG_DFL) {
        sigaction(SIGTRAP, &previous_trap_action, nullptr);
        raise(SIGTRAP);
    } else if (previous_trap_action.sa_handler != SIG_IGN) {
        previous_trap_action.sa_handler(signal);
    }
}

long sync_cores()
{
    return syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
}

struct Choice {
    enum spc_sites_kind kind;
    const char *reason;
};

Choice choose()
{
    const char *forced = std::getenv("SPC_SITES");
    if (forced != nullptr && std::strcmp(forced, "flag") == 0) {
        return {SPC_SITES_KIND_FLAG, "SPC_SITES=flag"};
    }
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) != 0 ||
        sync_cores() != 0) {
        return {SPC_SITES_KIND_FLAG, "membarrier cannot synchronise cores"};
    }
    struct sigaction action = {};
    action.sa_sigaction = on_trap;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGTRAP, &action, &previous_trap_action) != 0) {
        return {SPC_SITES_KIND_FLAG, "no SIGTRAP handler"};
    }
    return {SPC_SITES_KIND_PATCHED, "membarrier and SIGTRAP available"};
}

const Choice &choice()
{
    static const Choice chosen = [] {
        Choice c = choose();
        if (verbose()) {
            std::fprintf(stderr, "spc: sites are %s (%s)\n",
                         c.kind == SPC_SITES_KIND_PATCHED ? "patched" : "flag tests", c.reason);
        }
        return c;
    }();
    return chosen;
}

bool any_timer_on()
{
    for (int id = 0; id < OMPI_SPC_NUM_COUNTERS; ++id) {
        if (spc_counter_infos[id].kind == SPC_KIND_TIMER && spc_counter_is_enabled(id)) {
            return true;
        }
    }
    return false;
}

bool is_hook(int id) { return id <= SPC_HOOK_SITE_ID(0); }
int hook_of(int id) { return SPC_HOOK_SITE_ID(0) - id; }
bool is_switch(int id) { return id <= SPC_SWITCH_SITE_ID(0) && !is_hook(id); }
int switch_key(int id) { return SPC_SWITCH_SITE_ID(0) - id; }

bool wanted_on(const spc_site &site)
{
    if (is_hook(site.id)) {
        return spc_hook_is_on(hook_of(site.id));
    }
    if (is_switch(site.id)) {
        return spc_switch_is_on(switch_key(site.id));
    }
    if (site.id == SPC_ANY_TIMER) {
        return any_timer_on();
    }
    return spc_counter_is_enabled(site.id) || spc_counter_is_enabled(site.id2);
}

// Whether a site's state depends on counter id (or switch site id).
bool follows(const spc_site &site, int id)
{
    if (id < SPC_ANY_TIMER || site.id < SPC_ANY_TIMER) {  // a switch or a hook
        return site.id == id;
    }
    if (site.id == SPC_ANY_TIMER) {
        return spc_counter_infos[id].kind == SPC_KIND_TIMER;
    }
    return site.id == id || site.id2 == id;
}

// Which of a site's targets it should jump to while on.
const int32_t &target_for(const spc_site &site)
{
    if (!is_hook(site.id)) {
        return site.on;
    }
    const int hook = hook_of(site.id);
    if (spc_hook_all_counters(hook)) {
        return spc_timer_sampling() > 1 ? site.all_sampled : site.all;
    }
    if (spc_hook_switches_on(hook)) {
        return site.on;
    }
    return spc_hook_timers_alone(hook) && spc_timer_sampling() > 1 ? site.timers_sampled : site.counters;
}

// The 5 bytes a site should hold: off, the no-op, or for a site at a
// function's entry the jump to its plain code; on, a jump past its code's
// flag test to the target target_for chose (a hook's copy with tests, for
// its counters alone, for all counters with exact or sampled timers, or
// for sampled timers alone).
void code_for(const spc_site &site, bool on, unsigned char code[5])
{
    if (!on && site.off == 0) {
        std::memcpy(code, kNop5, sizeof kNop5);
        return;
    }
    unsigned char *at = address(&site.at);
    const int32_t &target = on ? target_for(site) : site.off;
    int32_t displacement = static_cast<int32_t>(address(&target) - (at + 5));
    code[0] = kJmp;
    std::memcpy(code + 1, &displacement, sizeof displacement);
}

struct Patch {
    unsigned char *at;
    unsigned char code[5];
};

// Makes the pages of the patches writable (prot: RWX) or read-execute again.
bool protect(const std::vector<Patch> &patches, int prot)
{
    const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    for (const Patch &patch : patches) {
        uintptr_t first = reinterpret_cast<uintptr_t>(patch.at) & ~(page - 1);
        uintptr_t last = (reinterpret_cast<uintptr_t>(patch.at) + 4) & ~(page - 1);
        if (mprotect(reinterpret_cast<void *>(first), last - first + page, prot) != 0) {
            return false;
        }
    }
    return true;
}

// Code is read and written one byte at a time through these two, in
// assembly: single-byte accesses are atomic, and ThreadSanitizer (which has
// no shadow for code) does not see them.
unsigned char load_code(const unsigned char *at)
{
    unsigned char byte;
    __asm__ volatile("movb %1, %0" : "=q"(byte) : "m"(*at));
    return byte;
}

void store(unsigned char *at, const unsigned char *bytes, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        __asm__ volatile("movb %1, %0" : "=m"(at[i]) : "q"(bytes[i]) : "memory");
    }
}

bool holds(const unsigned char *at, const unsigned char code[5])
{
    for (size_t i = 0; i < 5; ++i) {
        if (load_code(at + i) != code[i]) {
            return false;
        }
    }
    return true;
}

// The three steps of the header comment over a batch; false if the pages
// cannot be made writable (then nothing was written).
bool apply(const std::vector<Patch> &patches)
{
    if (patches.empty()) {
        return true;
    }
    if (!protect(patches, PROT_READ | PROT_WRITE | PROT_EXEC)) {
        protect(patches, PROT_READ | PROT_EXEC);
        return false;
    }
    for (const Patch &patch : patches) {
        store(patch.at, &kInt3, 1);
    }
    sync_cores();
    for (const Patch &patch : patches) {
        store(patch.at + 1, patch.code + 1, 4);
    }
    sync_cores();
    for (const Patch &patch : patches) {
        store(patch.at, patch.code, 1);
    }
    sync_cores();
    protect(patches, PROT_READ | PROT_EXEC);
    return true;
}

constexpr int kEverySite = INT32_MIN;

// Patches for the sites of table that do not hold what they should; only
// those of counter id or switch site id (or every one, kEverySite).
std::vector<Patch> patches_for(const Table &table, int id)
{
    std::vector<Patch> patches;
    const spc_site *end = table.end.load(std::memory_order_relaxed);
    for (const spc_site *site = table.begin.load(std::memory_order_relaxed); site < end; ++site) {
        if (id != kEverySite && !follows(*site, id)) {
            continue;
        }
        Patch patch{address(&site->at), {}};
        code_for(*site, wanted_on(*site), patch.code);
        if (!holds(patch.at, patch.code)) {
            patches.push_back(patch);
        }
    }
    return patches;
}

}  // namespace

namespace spc {

void sites_switch(int id)
{
    std::lock_guard<std::mutex> lock(mutex);
    for (Table &table : tables) {
        if (table.patchable && !apply(patches_for(table, id))) {
            std::string what = is_hook(id)     ? "hook " + std::to_string(hook_of(id))
                               : is_switch(id) ? "switch " + std::to_string(switch_key(id))
                                               : spc_counter_infos[id].name;
            std::fprintf(stderr, "spc: cannot rewrite the sites of %s (mprotect: %s); "
                         "they stay as they were\n", what.c_str(), std::strerror(errno));
        }
    }
}

}  // namespace spc

extern "C" {

enum spc_sites_kind spc_sites_kind(void) { return choice().kind; }

void spc_sites_register(const spc_site *begin, const spc_site *end)
{
    if (begin == nullptr || begin == end) {
        return;
    }
    bool patchable = choice().kind == SPC_SITES_KIND_PATCHED;
    std::lock_guard<std::mutex> lock(mutex);
    Table *free_entry = nullptr;
    for (Table &table : tables) {
        if (table.begin.load(std::memory_order_relaxed) == begin) {
            ++table.registrations;
            return;
        }
        if (free_entry == nullptr && table.begin.load(std::memory_order_relaxed) == nullptr) {
            free_entry = &table;
        }
    }
    if (free_entry == nullptr) {
        std::fprintf(stderr, "spc: more than %d tables of sites; the new one stays in the flag kind\n",
                     kMaxTables);
        return;
    }
    free_entry->end.store(end, std::memory_order_release);
    free_entry->begin.store(begin, std::memory_order_release);
    free_entry->registrations = 1;
    // Compiled as jumps to the flag tests (right whatever the flags say):
    // turn off what is off, and send what is on past its test.
    free_entry->patchable = patchable && apply(patches_for(*free_entry, kEverySite));
    if (patchable && !free_entry->patchable && verbose()) {
        std::fprintf(stderr, "spc: %zu sites stay flag tests: mprotect refused (%s)\n",
                     static_cast<size_t>(end - begin), std::strerror(errno));
    }
}

void spc_sites_unregister(const spc_site *begin)
{
    if (begin == nullptr) {
        return;
    }
    std::lock_guard<std::mutex> lock(mutex);
    for (Table &table : tables) {
        if (table.begin.load(std::memory_order_relaxed) == begin && --table.registrations == 0) {
            table.begin.store(nullptr, std::memory_order_release);
            table.end.store(nullptr, std::memory_order_release);
            table.patchable = false;
        }
    }
}

}  // extern "C"

#else  // sites compiled as flag tests: nothing to patch

namespace spc {
void sites_switch(int) {}
}  // namespace spc

extern "C" {
enum spc_sites_kind spc_sites_kind(void) { return SPC_SITES_KIND_FLAG; }
void spc_sites_register(const spc_site *, const spc_site *) {}
void spc_sites_unregister(const spc_site *) {}
}  // extern "C"

#endif
