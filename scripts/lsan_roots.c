/*
 * Preloaded after liblsan.so.0 by scripts/leak_check.sh, so that LeakSanitizer
 * works on an uninstrumented goro test binary. It does two things:
 *
 * 1. Starts LeakSanitizer before main. Preloaded, liblsan initialises itself on
 *    the first malloc, but Rust's runtime calls signal(2) before that, and
 *    liblsan's signal interceptor then jumps to a null pointer.
 *
 * 2. Makes goroutine stacks LeakSanitizer roots. LeakSanitizer scans thread
 *    stacks, TLS and globals, not other mmap'd memory, so anything a goroutine
 *    still parked at exit holds only on its own stack (a socket's poll
 *    descriptor, the G of a `sleep(Duration::MAX)`) would be reported as a
 *    leak. goro maps stacks as anonymous MAP_NORESERVE read-write slabs
 *    (src/runtime/task/stack.rs), and nothing else in these processes maps memory
 *    that way (liblsan replaces glibc's malloc). This file records such
 *    mappings. At exit, before liblsan's check, it copies the non-zero words of
 *    their resident pages (pages never touched hold no pointers) into one
 *    buffer and registers that buffer as a root region: one region, because
 *    this liblsan rereads /proc/self/maps for each region, and 100,000 stacks
 *    would take a minute. The copy goes through process_vm_readv, which fails
 *    instead of faulting on a guard page.
 *    liblsan registers its at-exit check after this library's constructors have
 *    run, so ours is registered at the first stack mapping, during main (exit
 *    handlers run last registered first).
 *
 * The cost of (2): pooled stacks of goroutines that have finished are scanned
 * too, and a stale pointer left on one hides the block it points to. A leak
 * repeated over many goroutines still shows once stacks are reused and their
 * old contents overwritten (not when every goroutine had a stack of its own).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

void __lsan_init(void);
void __lsan_register_root_region(const void *p, size_t size);

/* Enough for 4 TiB of 64 MiB slabs; more are not recorded (false reports, not
 * hidden leaks). */
#define MAX_SLABS 65536

static struct {
    _Atomic uintptr_t base;
    size_t len;
} slabs[MAX_SLABS];
static atomic_size_t nslabs;

typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
static _Atomic(mmap_fn) real_mmap;

static mmap_fn next_mmap(void) {
    mmap_fn f = atomic_load(&real_mmap);
    if (!f) {
        f = (mmap_fn)dlsym(RTLD_NEXT, "mmap");
        atomic_store(&real_mmap, f);
    }
    return f;
}

static void register_stack_roots(void);

static void install_exit_hook(void) {
    atexit(register_stack_roots);
}

static void record(void *p, size_t len, int prot, int flags) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    const int want = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
    if (p == MAP_FAILED || (flags & want) != want || prot != (PROT_READ | PROT_WRITE))
        return;
    pthread_once(&once, install_exit_hook);
    size_t i = atomic_fetch_add(&nslabs, 1);
    if (i >= MAX_SLABS)
        return;
    slabs[i].len = len;
    atomic_store(&slabs[i].base, (uintptr_t)p); /* published last: 0 = not yet */
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    void *p = next_mmap()(addr, len, prot, flags, fd, off);
    record(p, len, prot, flags);
    return p;
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    return mmap(addr, len, prot, flags, fd, off);
}

/* The copy: `len` words kept out of `cap`, in memory mapped here (not recorded). */
static uintptr_t *copy;
static size_t len, cap;

/* Room for `words` more words; false if the memory could not be had. */
static int reserve(size_t words) {
    if (len + words <= cap)
        return 1;
    size_t want = cap ? cap : (size_t)1 << 20;
    while (want < len + words)
        want *= 2;
    void *p = copy ? mremap(copy, cap * sizeof *copy, want * sizeof *copy, MREMAP_MAYMOVE)
                   : next_mmap()(NULL, want * sizeof *copy, PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return 0;
    copy = p;
    cap = want;
    return 1;
}

/* Appends the non-zero words of the readable pages of [from, to). */
static void keep(uintptr_t from, uintptr_t to, uintptr_t page) {
    while (from < to) {
        size_t words = (to - from) / sizeof *copy;
        if (!reserve(words))
            return;
        struct iovec local = {copy + len, words * sizeof *copy};
        struct iovec remote = {(void *)from, words * sizeof *copy};
        ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
        size_t n = got > 0 ? (size_t)got / sizeof *copy : 0;
        const uintptr_t *read = copy + len;
        size_t kept = 0;
        for (size_t i = 0; i < n; i++)
            if (read[i])
                copy[len + kept++] = read[i];
        len += kept;
        /* A short read stopped at an unreadable page: skip that page. */
        from += n * sizeof *copy;
        if (from < to)
            from = (from / page + 1) * page;
    }
}

/* Copies the resident pages of every recorded slab and registers the copy. */
static void register_stack_roots(void) {
    static unsigned char vec[1 << 16];
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    size_t n = atomic_load(&nslabs);
    if (n > MAX_SLABS)
        n = MAX_SLABS;
    for (size_t i = 0; i < n; i++) {
        uintptr_t base = atomic_load(&slabs[i].base);
        if (!base)
            continue;
        uintptr_t end = base + slabs[i].len / page * page;
        uintptr_t run = 0; /* start of the current resident run, 0 if none */
        for (uintptr_t at = base; at < end;) {
            size_t pages = (end - at) / page;
            if (pages > sizeof vec)
                pages = sizeof vec;
            if (mincore((void *)at, pages * page, vec) != 0)
                break; /* unmapped meanwhile: skip the rest of this slab */
            for (size_t j = 0; j < pages; j++, at += page) {
                if (vec[j] & 1) {
                    if (!run)
                        run = at;
                } else if (run) {
                    keep(run, at, page);
                    run = 0;
                }
            }
        }
        if (run)
            keep(run, end, page);
    }
    if (len)
        __lsan_register_root_region(copy, len * sizeof *copy);
}

__attribute__((constructor)) static void start(void) {
    __lsan_init();
    next_mmap();
}
