// Must fail under ThreadSanitizer: two threads add to one counter with a plain
// read-modify-write, the data race the storage code avoids.  Shows that the
// ThreadSanitizer build really checks.
#include <cstdint>
#include <cstdio>
#include <thread>

static uint64_t racy_counter;

int main()
{
    auto add = [] {
        for (int i = 0; i < 100000; ++i) {
            racy_counter = racy_counter + 1;
        }
    };
    std::thread first(add), second(add);
    first.join();
    second.join();
    std::printf("%llu\n", static_cast<unsigned long long>(racy_counter));
    return 0;
}
