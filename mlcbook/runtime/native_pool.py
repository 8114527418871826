"""The native half of the thread pool: worker threads and the launcher, in LLVM IR.

A ``parallel`` loop of a compiled kernel calls ``launcher(body, n, closure)``. Handing the
chunks to Python threads costs tens of microseconds per loop (waking a thread and taking
the GIL twice), more than a whole small matmul; so the launcher is native code, compiled
once per process by the same LLVM as the kernels, and no Python runs while a kernel runs.

How a launch goes, for ``t`` threads (the caller and ``t - 1`` workers):

1. the caller writes the job (body, n, closure), cuts ``[0, n)`` into ``c`` chunks: up to
   :data:`CHUNKS_PER_THREAD` per thread, as many for each thread, that divide ``n``
   evenly (``n`` chunks if ``n`` is smaller; if no such count divides ``n``, four times
   as many uneven chunks, so that the threads end at most a small chunk apart), sets
   ``pending = c``
   and publishes a new *ticket* ``generation << 32 | c << 16 | next chunk`` and
   generation, waking sleeping workers if there are any;
2. every thread, the caller too, claims chunks by compare-and-swap on the ticket until
   none is left, runs ``body(begin, end, closure)`` on each and decrements ``pending``;
   the chunk count travels in the ticket, so a late worker can never claim a chunk of a
   job that has finished and been replaced (its swap fails: the generation moved on).
   Chunks claimed one at a time balance themselves: a worker that starts late (waking
   up, or its core held by another process) finds its share taken, instead of the
   others waiting for a fixed half;
3. the caller waits for ``pending == 0``.

Workers are pthreads that *spin* (checking the generation, with the CPU's pause hint) for
:data:`SPIN_SECONDS` of wall time after each job, so the next parallel loop of a model starts at
once, and then sleep on a condition variable, so an idle pool costs nothing. ``wake()``
rouses sleeping workers for another spin: an executable calls it when a run starts, so
their wake-up overlaps its first kernels. A spinning thread yields its core now and then
(every 128 pauses): on a machine with more busy threads than cores, the thread it waits
for may need it. The counters every thread writes (ticket, pending, generation, sleepers)
have a cache line each. A launch while another one runs (two Python threads calling
kernels) runs serially instead of waiting.
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import os
import time

from ..errors import ArgumentError

#: most threads a launch can use: the count travels in 16 bits of the ticket (and the
#: native counter is an i32), so larger numbers would wrap
MAX_THREADS = 1024

#: a parallel loop is cut into this many chunks per thread (fewer if it is shorter), which
#: the threads claim one at a time: a thread that starts late (a worker waking up, or
#: one whose core another process holds) then finds the others have taken its share
#: instead of making them wait for it
CHUNKS_PER_THREAD = 4
#: the chunk count travels in 16 bits of the ticket (and is capped below 2^16)
MAX_CHUNKS_PER_THREAD = 63

#: how long an idle worker spins before it sleeps; waking a sleeping thread takes tens of
#: microseconds on a virtual machine, the time of a whole small kernel
SPIN_SECONDS = 2e-3

# pthread_mutex_t / pthread_cond_t are at most 64 / 48 bytes on the platforms LLVM JITs for
# (glibc, musl, macOS); 128 bytes, 16-aligned, leaves room
_IR = r"""
@threads = global i32 1
@chunking = global i32 1
@spin_ns = global i64 2000000
@clock_id = global i32 1
@workers = global i32 0
@shutdown = global i32 0
@exited = global i32 0
@pid = global i32 0
@nudges = global i64 0
; the counters every thread writes each get a cache line of their own (padded to 64
; bytes), so that claiming a chunk does not invalidate the line the job is read from
@sleepers = global {{ i32, [60 x i8] }} zeroinitializer, align 64
@generation = global {{ i64, [7 x i64] }} zeroinitializer, align 64
@ticket = global {{ i64, [7 x i64] }} zeroinitializer, align 64
@pending = global {{ i64, [7 x i64] }} zeroinitializer, align 64
@job_body = global ptr null, align 64
@job_n = global i64 0
@job_closure = global ptr null
@launch_lock = global [16 x i64] zeroinitializer, align 16
@sleep_lock = global [16 x i64] zeroinitializer, align 16
@wake = global [16 x i64] zeroinitializer, align 16

declare i32 @pthread_create(ptr, ptr, ptr, ptr)
declare i32 @pthread_mutex_init(ptr, ptr)
declare i32 @pthread_mutex_lock(ptr)
declare i32 @pthread_mutex_trylock(ptr)
declare i32 @pthread_mutex_unlock(ptr)
declare i32 @pthread_cond_init(ptr, ptr)
declare i32 @pthread_cond_wait(ptr, ptr)
declare i32 @pthread_cond_broadcast(ptr)
declare i32 @getpid()
declare i32 @sched_yield()
declare i32 @clock_gettime(i32, ptr)
{pause_decl}

define internal void @pause() {{
  {pause_call}
  ret void
}}

; nanoseconds on the monotonic clock
define internal i64 @now_ns() {{
  %ts = alloca {{ i64, i64 }}, align 8
  %id = load i32, ptr @clock_id
  call i32 @clock_gettime(i32 %id, ptr %ts)
  %sec = load i64, ptr %ts
  %nsp = getelementptr inbounds {{ i64, i64 }}, ptr %ts, i32 0, i32 1
  %nsec = load i64, ptr %nsp
  %sec.ns = mul i64 %sec, 1000000000
  %t = add i64 %sec.ns, %nsec
  ret i64 %t
}}

; (re)initialize: at first use, and in a child process after fork (its workers are gone)
define void @mlcb_pool_init() {{
  call i32 @pthread_mutex_init(ptr @launch_lock, ptr null)
  call i32 @pthread_mutex_init(ptr @sleep_lock, ptr null)
  call i32 @pthread_cond_init(ptr @wake, ptr null)
  store i32 0, ptr @workers
  store i32 0, ptr @exited
  store i32 0, ptr @sleepers
  %p = call i32 @getpid()
  store i32 %p, ptr @pid
  ret void
}}

; at exit: workers leave their loops (their code must not run while it is unmapped)
define void @mlcb_pool_shutdown() {{
  store atomic i32 1, ptr @shutdown monotonic, align 4
  call i32 @pthread_mutex_lock(ptr @sleep_lock)
  call i32 @pthread_cond_broadcast(ptr @wake)
  call i32 @pthread_mutex_unlock(ptr @sleep_lock)
  ret void
}}

; claim and run chunks of job `gen` until none is left
define internal void @run_chunks(i64 %gen) {{
entry:
  %g32 = and i64 %gen, 4294967295
  br label %claim
claim:
  %t = load atomic i64, ptr @ticket acquire, align 8
  %tgen = lshr i64 %t, 32
  %same = icmp eq i64 %tgen, %g32
  br i1 %same, label %check, label %done
check:
  %c = and i64 %t, 65535
  %chunks.s = lshr i64 %t, 16
  %chunks = and i64 %chunks.s, 65535
  %left = icmp ult i64 %c, %chunks
  br i1 %left, label %swap, label %done
swap:
  %t1 = add i64 %t, 1
  %r = cmpxchg ptr @ticket, i64 %t, i64 %t1 acq_rel acquire
  %ok = extractvalue {{ i64, i1 }} %r, 1
  br i1 %ok, label %run, label %claim
run:
  ; the job cannot finish while our chunk is pending: its fields are ours to read
  %body = load ptr, ptr @job_body
  %n = load i64, ptr @job_n
  %closure = load ptr, ptr @job_closure
  %cn = mul i64 %c, %n
  %begin = udiv i64 %cn, %chunks
  %c1 = add i64 %c, 1
  %c1n = mul i64 %c1, %n
  %end = udiv i64 %c1n, %chunks
  call void %body(i64 %begin, i64 %end, ptr %closure)
  atomicrmw sub ptr @pending, i64 1 release
  br label %claim
done:
  ret void
}}

define internal ptr @worker(ptr %arg) {{
entry:
  %seen0 = load atomic i64, ptr @generation acquire, align 8
  br label %idle
idle:
  %seen = phi i64 [%seen0, %entry], [%g.spun, %work], [%g.slept, %work.slept], [%seen, %roused]
  %start = call i64 @now_ns()
  %limit = load i64, ptr @spin_ns
  br label %spinning
spinning:
  %i = phi i64 [0, %idle], [%i1, %spin.pause], [%i1, %spin.turn]
  %g.spun = load atomic i64, ptr @generation acquire, align 8
  %new = icmp ne i64 %g.spun, %seen
  br i1 %new, label %work, label %spin.more
spin.more:
  %stop.spin = load atomic i32, ptr @shutdown monotonic, align 4
  %quit.spin = icmp ne i32 %stop.spin, 0
  br i1 %quit.spin, label %quit, label %spin.pause
spin.pause:
  call void @pause()
  %i1 = add i64 %i, 1
  %low = and i64 %i1, 127
  %turn = icmp eq i64 %low, 0
  br i1 %turn, label %spin.turn, label %spinning
spin.turn:
  ; every 128 pauses: yield the core (on a machine with more busy threads than cores the
  ; thread that has work may need it; with nothing else to run the yield returns at
  ; once), and sleep once @spin_ns of wall time have passed
  call i32 @sched_yield()
  %now = call i64 @now_ns()
  %spent = sub i64 %now, %start
  %keep = icmp slt i64 %spent, %limit
  br i1 %keep, label %spinning, label %sleep
sleep:
  ; count ourselves a sleeper *before* the last look at the generation: a launcher
  ; publishes the generation before it looks at the sleepers (both sequentially
  ; consistent), so either it sees us and wakes us, or we see its job
  call i32 @pthread_mutex_lock(ptr @sleep_lock)
  %nudge0 = load i64, ptr @nudges
  atomicrmw add ptr @sleepers, i32 1 seq_cst
  br label %sleeping
sleeping:
  %g.slept = load atomic i64, ptr @generation seq_cst, align 8
  %woken = icmp ne i64 %g.slept, %seen
  br i1 %woken, label %awake, label %nudge.check
nudge.check:
  ; mlcb_pool_wake: spin again, a parallel loop is coming
  %nudge1 = load i64, ptr @nudges
  %nudged = icmp ne i64 %nudge1, %nudge0
  br i1 %nudged, label %rouse, label %stopping
rouse:
  atomicrmw sub ptr @sleepers, i32 1 seq_cst
  call i32 @pthread_mutex_unlock(ptr @sleep_lock)
  br label %roused
roused:
  br label %idle
stopping:
  %stop = load atomic i32, ptr @shutdown monotonic, align 4
  %quit.sleep = icmp ne i32 %stop, 0
  br i1 %quit.sleep, label %quit.locked, label %wait
quit.locked:
  atomicrmw sub ptr @sleepers, i32 1 seq_cst
  call i32 @pthread_mutex_unlock(ptr @sleep_lock)
  br label %quit
quit:
  atomicrmw add ptr @exited, i32 1 release
  ret ptr null
wait:
  call i32 @pthread_cond_wait(ptr @wake, ptr @sleep_lock)
  br label %sleeping
awake:
  atomicrmw sub ptr @sleepers, i32 1 seq_cst
  call i32 @pthread_mutex_unlock(ptr @sleep_lock)
  call void @run_chunks(i64 %g.slept)
  br label %work.slept
work.slept:
  br label %idle
work:
  call void @run_chunks(i64 %g.spun)
  br label %idle
}}

; wake sleeping workers so that they spin again (unless loops run on one thread): called
; when a run of kernels starts, their wake-up (tens of microseconds) then overlaps the
; caller's own work instead of delaying the first parallel loop
define void @mlcb_pool_wake() {{
entry:
  %want = load i32, ptr @threads
  %several = icmp sgt i32 %want, 1
  br i1 %several, label %sleepers, label %done
sleepers:
  %s = load atomic i32, ptr @sleepers seq_cst, align 4
  %any = icmp ne i32 %s, 0
  br i1 %any, label %owned, label %done
owned:
  ; a forked child's copy of the pool is not its own: its first launch starts afresh
  %me = call i32 @getpid()
  %owner = load i32, ptr @pid
  %mine = icmp eq i32 %me, %owner
  br i1 %mine, label %rouse, label %done
rouse:
  call i32 @pthread_mutex_lock(ptr @sleep_lock)
  %n = load i64, ptr @nudges
  %n1 = add i64 %n, 1
  store i64 %n1, ptr @nudges
  call i32 @pthread_cond_broadcast(ptr @wake)
  call i32 @pthread_mutex_unlock(ptr @sleep_lock)
  br label %done
done:
  ret void
}}

define void @mlcb_pool_launch(ptr %body, i64 %n, ptr %closure) {{
entry:
  %tid = alloca i64
  %want32 = load i32, ptr @threads
  %want = sext i32 %want32 to i64
  %fewer = icmp slt i64 %n, %want
  %t0 = select i1 %fewer, i64 %n, i64 %want
  %alone = icmp sle i64 %t0, 1
  br i1 %alone, label %serial, label %forked
forked:
  %closing = load atomic i32, ptr @shutdown monotonic, align 4
  %closed = icmp ne i32 %closing, 0
  br i1 %closed, label %serial, label %owned
owned:
  %me = call i32 @getpid()
  %owner = load i32, ptr @pid
  %child = icmp ne i32 %me, %owner
  br i1 %child, label %reinit, label %lock
reinit:
  call void @mlcb_pool_init()
  br label %lock
lock:
  %busy = call i32 @pthread_mutex_trylock(ptr @launch_lock)
  %taken = icmp ne i32 %busy, 0
  br i1 %taken, label %serial, label %grow
grow:
  %have32 = load i32, ptr @workers
  %have = sext i32 %have32 to i64
  %need = sub i64 %t0, 1
  %enough = icmp sge i64 %have, %need
  br i1 %enough, label %publish, label %spawn
spawn:
  %err = call i32 @pthread_create(ptr %tid, ptr null, ptr @worker, ptr null)
  %failed = icmp ne i32 %err, 0
  br i1 %failed, label %publish, label %spawned
spawned:
  %have1 = add i32 %have32, 1
  store i32 %have1, ptr @workers
  br label %grow
publish:
  ; as many threads as exist (fewer if the OS refused a thread), each taking about
  ; @chunking chunks: more chunks than threads let the caller take the chunks of a
  ; worker that is late (asleep, or its core lent to another process)
  %made32 = load i32, ptr @workers
  %made = sext i32 %made32 to i64
  %made1 = add i64 %made, 1
  %short = icmp slt i64 %made1, %t0
  %t = select i1 %short, i64 %made1, i64 %t0
  %per32 = load i32, ptr @chunking
  %per = sext i32 %per32 to i64
  %tk.want = mul i64 %t, %per
  %few = icmp slt i64 %n, %tk.want
  br i1 %few, label %chunked, label %divide
divide:
  ; of t*per, t*(per - 1), ..., t chunks, the most that cut n evenly: equal chunks, as
  ; many for each thread, claimed in turn end together
  %m = phi i64 [%per, %publish], [%m.next, %divide.next]
  %c = mul i64 %t, %m
  %rem = urem i64 %n, %c
  %even = icmp eq i64 %rem, 0
  br i1 %even, label %chunked, label %divide.next
divide.next:
  %m.next = sub i64 %m, 1
  %tried = icmp slt i64 %m.next, 1
  br i1 %tried, label %uneven, label %divide
uneven:
  ; none does: four times as many, smaller chunks (the threads then end at most a small
  ; chunk apart), fewer than 2^16 (the ticket's field)
  %fine.want = mul i64 %tk.want, 4
  %fine.few = icmp slt i64 %n, %fine.want
  %fine = select i1 %fine.few, i64 %n, i64 %fine.want
  %fine.big = icmp ugt i64 %fine, 65535
  %fine.c = select i1 %fine.big, i64 65535, i64 %fine
  br label %chunked
chunked:
  %chunks = phi i64 [%n, %publish], [%c, %divide], [%fine.c, %uneven]
  %g = load i64, ptr @generation
  %g1 = add i64 %g, 1
  store ptr %body, ptr @job_body
  store i64 %n, ptr @job_n
  store ptr %closure, ptr @job_closure
  store i64 %chunks, ptr @pending
  %g1lo = and i64 %g1, 4294967295
  %tk.g = shl i64 %g1lo, 32
  %tk.c = shl i64 %chunks, 16
  %tk = or i64 %tk.g, %tk.c
  store atomic i64 %tk, ptr @ticket release, align 8
  store atomic i64 %g1, ptr @generation seq_cst, align 8
  %sleeping = load atomic i32, ptr @sleepers seq_cst, align 4
  %asleep = icmp ne i32 %sleeping, 0
  br i1 %asleep, label %rouse, label %go
rouse:
  call i32 @pthread_mutex_lock(ptr @sleep_lock)
  call i32 @pthread_cond_broadcast(ptr @wake)
  call i32 @pthread_mutex_unlock(ptr @sleep_lock)
  br label %go
go:
  call void @run_chunks(i64 %g1)
  %join.start = call i64 @now_ns()
  %limit = load i64, ptr @spin_ns
  %join.limit = lshr i64 %limit, 6
  br label %join
join:
  %i = phi i64 [0, %go], [%i1, %join.wait], [%i1, %join.turn], [%i1, %join.yield]
  %left = load atomic i64, ptr @pending acquire, align 8
  %all = icmp eq i64 %left, 0
  br i1 %all, label %finish, label %join.wait
join.wait:
  call void @pause()
  %i1 = add i64 %i, 1
  %low = and i64 %i1, 127
  %turn = icmp eq i64 %low, 0
  br i1 %turn, label %join.turn, label %join
join.turn:
  ; the last chunks are short (a chunk is an eighth of a loop at 2 threads): after 1/64
  ; of a worker's spin, yield every 128 pauses, in case the thread it waits for shares
  ; its core
  %now = call i64 @now_ns()
  %spent = sub i64 %now, %join.start
  %long = icmp sge i64 %spent, %join.limit
  br i1 %long, label %join.yield, label %join
join.yield:
  call i32 @sched_yield()
  br label %join
finish:
  call i32 @pthread_mutex_unlock(ptr @launch_lock)
  ret void
serial:
  call void %body(i64 0, i64 %n, ptr %closure)
  ret void
}}
"""

# without POSIX threads (Windows) parallel loops run on the calling thread
_SERIAL_IR = r"""
@threads = global i32 1
@workers = global i32 0

define void @mlcb_pool_launch(ptr %body, i64 %n, ptr %closure) {
  call void %body(i64 0, i64 %n, ptr %closure)
  ret void
}
"""

_PAUSE = {  # the CPU's spin-wait hint, by architecture
    "x86_64": ("declare void @llvm.x86.sse2.pause()", "call void @llvm.x86.sse2.pause()"),
    "aarch64": ("declare void @llvm.aarch64.hint(i32)", "call void @llvm.aarch64.hint(i32 1)"),
}


class NativePool:
    """The compiled pool: the launcher's address and its ``threads`` and chunking settings.
    ``posix=False`` (the default on Windows) gives a launcher that runs every parallel loop
    on the calling thread."""

    def __init__(self, posix: bool = os.name == "posix"):
        from ..codegen.jit import compile_ir
        from ..codegen.target import Target
        target = Target()
        self.posix = posix
        if not posix:
            self._lib = compile_ir(_SERIAL_IR, [], target)
            self.launcher_address = self._lib.address("mlcb_pool_launch")
            self._threads = ctypes.c_int32.from_address(self._lib.global_address("threads"))
            self._workers = ctypes.c_int32.from_address(self._lib.global_address("workers"))
            self.wake = _nothing
            return
        arch = target.triple.split("-")[0]
        decl, call = _PAUSE.get(arch, ("", ""))
        self._lib = compile_ir(_IR.format(pause_decl=decl, pause_call=call), [], target)
        self.launcher_address = self._lib.address("mlcb_pool_launch")
        ctypes.CFUNCTYPE(None)(self._lib.address("mlcb_pool_init"))()
        self._threads = ctypes.c_int32.from_address(self._lib.global_address("threads"))
        self._spin_ns = ctypes.c_int64.from_address(self._lib.global_address("spin_ns"))
        clock = ctypes.c_int32.from_address(self._lib.global_address("clock_id"))
        clock.value = time.CLOCK_MONOTONIC
        self._workers = ctypes.c_int32.from_address(self._lib.global_address("workers"))
        self._exited = ctypes.c_int32.from_address(self._lib.global_address("exited"))
        self._chunking = ctypes.c_int32.from_address(self._lib.global_address("chunking"))
        self._sleepers = ctypes.c_int32.from_address(self._lib.global_address("sleepers"))
        self._ticket = ctypes.c_int64.from_address(self._lib.global_address("ticket"))
        self._chunking.value = CHUNKS_PER_THREAD
        #: ``pool.wake()`` makes sleeping workers spin again (a no-op when none sleeps)
        self.wake = ctypes.CFUNCTYPE(None)(self._lib.address("mlcb_pool_wake"))
        self._spin_ns.value = int(SPIN_SECONDS * 1e9)
        atexit.register(self._shutdown)

    def _shutdown(self) -> None:
        """Let the workers return before the interpreter frees the code they run."""
        ctypes.CFUNCTYPE(None)(self._lib.address("mlcb_pool_shutdown"))()
        deadline = time.perf_counter() + 1.0
        while self._exited.value < self._workers.value and time.perf_counter() < deadline:
            time.sleep(1e-4)

    @property
    def threads(self) -> int:
        return self._threads.value

    @threads.setter
    def threads(self, n: int) -> None:
        self._threads.value = n

    @property
    def chunks_per_thread(self) -> int:
        """Chunks a parallel loop is cut into per thread (1: one static chunk each)."""
        return self._chunking.value if self.posix else 1

    @chunks_per_thread.setter
    def chunks_per_thread(self, k: int) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_CHUNKS_PER_THREAD:
            raise ArgumentError(f"chunks per thread must be an int from 1 to "
                                f"{MAX_CHUNKS_PER_THREAD}, got {k!r}")
        if self.posix:
            self._chunking.value = k

    @property
    def last_chunk_count(self) -> int:
        """How many chunks the last parallel loop run on several threads was cut into."""
        return (self._ticket.value >> 16) & 0xFFFF if self.posix else 0

    @property
    def sleeping(self) -> int:
        """Workers asleep now (the others spin, or run a loop)."""
        return self._sleepers.value if self.posix else 0

    @property
    def workers(self) -> int:
        """Worker threads started so far (they are started at the first parallel loop)."""
        return self._workers.value


def _nothing() -> None:
    pass


@functools.lru_cache(maxsize=None)
def native_pool() -> NativePool:
    """The process's pool, compiled at first use."""
    pool = NativePool()
    if pool.posix:
        pool.threads = _default_threads()
    return pool


def _default_threads() -> int:
    env = os.environ.get("MLCBOOK_NUM_THREADS", "").strip()
    if env:
        if not env.isdigit() or not 1 <= int(env) <= MAX_THREADS:
            raise ArgumentError(f"MLCBOOK_NUM_THREADS={env!r} is not a number of threads from "
                                f"1 to {MAX_THREADS}; set it to e.g. 2, or unset it to use "
                                "every core")
        return int(env)
    return min(os.cpu_count() or 1, MAX_THREADS)
