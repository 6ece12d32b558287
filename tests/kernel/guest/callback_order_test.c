// SPDX-License-Identifier: MIT
/*
 * callback_order_test.c - the free callback's last touch of a pin against the kfree of that
 * pin (non-persistent pins). The callback ends with complete_all(&pin->cb_done) after it has
 * dropped pin->lock; a freeing side (UNPIN) that waited for pin->lock instead of the
 * completion would free the pin in between. To put it there every time rather than by luck:
 * the thread that frees the allocation (and so runs the callback) and the thread that unpins
 * share one CPU, the unpinning one at SCHED_FIFO; the provider holds the callback inside
 * nvidia_p2p_free_page_table (unlink_delay_ms) while UNPIN comes and blocks on pin->lock.
 * When the callback unlocks, UNPIN runs at once (a preemptible kernel, as the debug kernel
 * is) and finishes before the callback resumes: with the waiting done on the lock, the
 * callback's complete_all then writes freed memory (KASAN's use-after-free report, which the
 * rig fails on). The same arrangement puts GET_INFO, blocked on pin->lock behind UNPIN, after
 * the whole of UNPIN: GET_INFO must hold its own reference on the pin (the concurrent
 * GET_INFO against unpin), and the exit of a process killed with the pin held, whose file's
 * release is then the freeing side. Skips without SCHED_FIFO.
 *   callback_order_test     run with gdrdrv use_persistent_mapping=0
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "t.h"
#include "emu.h"
#include "uapi/gdrdrv.h"

#define GPU_PAGE 65536ULL
#define ROUNDS 4
#define UNLINK_DELAY "/sys/module/nvp2p_emu/parameters/unlink_delay_ms"

static int fd = -1;

static int write_file(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    int ok;

    if (!f)
        return 0;
    ok = fputs(s, f) >= 0;
    return fclose(f) == 0 && ok;
}

static int on_cpu(int cpu)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof(set), &set) ? errno : 0;
}

static int fifo(int prio)
{
    struct sched_param sp = { .sched_priority = prio };

    return sched_setscheduler(0, SCHED_FIFO, &sp) ? errno : 0;
}

static void sleep_ms(unsigned int ms)
{
    struct timespec ts = { 0, (long)ms * 1000000L };

    nanosleep(&ts, NULL);
}

/*
 * One round: FREE (its callback held in free_page_table with pin->lock for 150 ms), UNPIN at
 * 40 ms (blocks on pin->lock), and with info set GET_INFO at 70 ms (finds the pin, blocks on
 * pin->lock behind UNPIN). With info, the callback runs on CPU 1 and UNPIN and GET_INFO share
 * CPU 0, UNPIN at the higher priority: when UNPIN has the lock it runs to its end before
 * GET_INFO resumes, so GET_INFO must hold a reference. Without, FREE and UNPIN share CPU 0.
 */
enum { BY_UNPIN, WITH_INFO, BY_EXIT, MODES };

struct round {
    uint64_t va, handle;
    int info;
    int free_ret, unpin_ret, info_ret, setup_err;
};

static void *freeing_thread(void *arg)
{
    struct round *r = arg;
    int e = on_cpu(r->info ? 1 : 0);

    if (e)
        r->setup_err = e;
    r->free_ret = emu_free(r->va);      /* runs gdrdrv's callback, held in free_page_table */
    return NULL;
}

static void *unpinning_thread(void *arg)
{
    struct round *r = arg;
    struct gdrdrv_unpin_buffer u = { .handle = r->handle };
    int e = on_cpu(0);

    if (!e)
        e = fifo(20);
    if (e) {
        r->setup_err = e;
        return NULL;
    }
    sleep_ms(40);                       /* the callback is held by now, holding pin->lock */
    r->unpin_ret = ioctl(fd, GDRDRV_IOC_UNPIN_BUFFER, &u) ? errno : 0;
    return NULL;
}

static void *info_thread(void *arg)
{
    struct round *r = arg;
    struct gdrdrv_get_info_v2 i = { .handle = r->handle };
    int e = on_cpu(0);

    if (!e)
        e = fifo(10);
    if (e) {
        r->setup_err = e;
        return NULL;
    }
    sleep_ms(70);                       /* UNPIN is waiting for pin->lock by now */
    r->info_ret = ioctl(fd, GDRDRV_IOC_GET_INFO_V2, &i) ? errno : 0;
    return NULL;
}

/*
 * BY_EXIT: the pin is a child's, the child is at SCHED_FIFO on CPU 0 and is killed at 40 ms:
 * the release of its file (at its exit) is the freeing side. Returns the child's pid, the
 * handle in *h; -1 when the child could not pin (its errno in *h).
 */
static pid_t pinning_child(uint64_t va, uint64_t *h)
{
    int pfd[2];
    pid_t pid;

    if (pipe(pfd))
        return -1;
    pid = fork();
    if (pid == 0) {
        struct gdrdrv_pin_buffer_v2 p = { .addr = va, .size = GPU_PAGE };
        int cfd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC), e = on_cpu(0);

        if (!e)
            e = fifo(20);
        if (!e && (cfd < 0 || ioctl(cfd, GDRDRV_IOC_PIN_BUFFER_V2, &p)))
            e = errno;
        p.handle = e ? ~0ULL - (uint64_t)e : p.handle;
        if (write(pfd[1], &p.handle, sizeof(p.handle)) != sizeof(p.handle))
            _exit(1);
        for (;;)
            pause();                    /* killed while the callback holds pin->lock */
    }
    close(pfd[1]);
    if (pid < 0 || read(pfd[0], h, sizeof(*h)) != sizeof(*h) || *h > ~0ULL - 4096) {
        int e = pid > 0 && *h > ~0ULL - 4096 ? (int)(~0ULL - *h) : EIO;

        if (pid > 0) {
            kill(pid, SIGKILL);
            t_wait_child(pid, 10);
        }
        close(pfd[0]);
        *h = (uint64_t)e;
        return -1;
    }
    close(pfd[0]);
    return pid;
}

/* ROUNDS rounds; "" or why it went wrong. Returns 77 when SCHED_FIFO is not allowed. */
static int rounds(int mode, char *why, size_t len)
{
    int info = mode == WITH_INFO;
    uint64_t base = emu_live_pins(), cbs = emu_callbacks_fired();

    for (int i = 0; i < ROUNDS; i++) {
        struct round r = { .info = info };
        struct gdrdrv_pin_buffer_v2 p = { .size = GPU_PAGE };
        pthread_t tf, tu, ti;
        pid_t child = 0;

        if (emu_alloc(GPU_PAGE, 1, 0, &r.va)) {
            snprintf(why, len, "alloc: %s", strerror(errno));
            return 1;
        }
        p.addr = r.va;
        if (mode == BY_EXIT && (child = pinning_child(r.va, &r.handle)) < 0) {
            emu_free(r.va);
            if (r.handle == EPERM) {
                snprintf(why, len, "no SCHED_FIFO here: %s", strerror(EPERM));
                return 77;
            }
            snprintf(why, len, "the child's pin: %s", strerror((int)r.handle));
            return 1;
        }
        if (mode != BY_EXIT && ioctl(fd, GDRDRV_IOC_PIN_BUFFER_V2, &p)) {
            snprintf(why, len, "pin: %s", strerror(errno));
            emu_free(r.va);
            return 1;
        }
        if (mode != BY_EXIT)
            r.handle = p.handle;
        pthread_create(&tf, NULL, freeing_thread, &r);
        if (mode == BY_EXIT) {
            sleep_ms(40);               /* the callback is held by now, holding pin->lock */
            kill(child, SIGKILL);
            if (t_wait_child(child, 30) != 128 + SIGKILL)
                r.unpin_ret = ECHILD;
        } else {
            pthread_create(&tu, NULL, unpinning_thread, &r);
            if (info)
                pthread_create(&ti, NULL, info_thread, &r);
            pthread_join(tu, NULL);
            if (info)
                pthread_join(ti, NULL);
        }
        pthread_join(tf, NULL);
        if (r.setup_err == EPERM) {
            snprintf(why, len, "no SCHED_FIFO here: %s", strerror(EPERM));
            return 77;
        }
        /* GET_INFO finds the pin still listed, or not at all (EINVAL): both are right. */
        if (r.setup_err || r.unpin_ret || r.free_ret || (r.info_ret && r.info_ret != EINVAL)) {
            snprintf(why, len, "round %d: setup %s, UNPIN %s, FREE %s, GET_INFO %s", i,
                     strerror(r.setup_err), strerror(r.unpin_ret), strerror(r.free_ret),
                     strerror(r.info_ret));
            return 1;
        }
    }
    if (emu_callbacks_fired() != cbs + ROUNDS || emu_live_pins() != base) {
        snprintf(why, len, "callbacks +%llu in %d rounds, live pins %llu -> %llu",
                 (unsigned long long)(emu_callbacks_fired() - cbs), ROUNDS,
                 (unsigned long long)base, (unsigned long long)emu_live_pins());
        return 1;
    }
    return 0;
}

int main(void)
{
    const char *names[MODES] = { "unpin_waits_for_callback_end", "get_info_holds_pin_across_unpin",
                                 "exit_waits_for_callback_end" };
    char why[200] = "";

    fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC);
    if (fd < 0 || emu_fd() < 0 || !write_file(UNLINK_DELAY, "150\n")) {
        t_fail("setup", "/dev/gdrdrv, the provider or " UNLINK_DELAY ": %s", strerror(errno));
        return t_status();
    }
    for (int mode = 0; mode < MODES; mode++) {
        int r = rounds(mode, why, sizeof(why));

        if (r == 77)
            t_skip(names[mode], "%s", why);
        else
            t_check(!r, names[mode], "%s", why);
    }
    write_file(UNLINK_DELAY, "0\n");
    close(fd);
    return t_status();
}
