"""Every limit, stated once. The database columns (db/models.py), the bundle checks, the
CLI, the Launch form and the queue all read these names."""

from __future__ import annotations

# One batch size: a bundle, a queued job, a serve stream and a CLI flag all refuse the
# same values. Far above any size a model's graph is captured at; as large as it is because
# `kernel-chain`'s batch counts tensor elements, whose kernel time grows only past ~1M
# elements on a big GPU (NVIDIA's V100 reference ran 500,000).
MAX_BATCH_SIZE = 1 << 24
# A model's feature or sequence dimension (mlp width, a KV cache's length).
MAX_FEATURES = 65536
# More sizes than this is a typo (or a runaway `...`), not a sweep anyone waits for.
MAX_BATCH_SIZES = 256
# modes x batch sizes: bounds what one queued job can ask for.
MAX_JOB_POINTS = 512
# A label, a worker target, a workload name: one line of this many characters
# (runs.label, jobs.label, jobs.target).
MAX_LABEL = 200
# Each extra process costs a process start, a CUDA context and a warm compile per batch
# size; more than a handful buys little over the rounds' own interval.
MAX_PROCESSES = 16
# Serve: requests in one stream, buckets in one strategy, a sizes file, the
# distribution's text (serve_configs.batch_dist).
MAX_REQUESTS = 1_000_000
MAX_BUCKETS = 256
MAX_SIZES_FILE_BYTES = 10 << 20
MAX_DIST_TEXT = 1000
# A serve stream's seed: what a BIGINT column holds (serve_configs.seed).
MAX_SEED = 2**63 - 1
# Text columns of the bundle and their sizes in the database.
ENVIRONMENT_TEXT_LIMITS = {
    "device": 8, "gpu_name": 200, "driver_version": 100, "cuda_version": 100,
    "torch_version": 100, "triton_version": 100, "python_version": 100, "hostname": 255,
    "cpu_model": 255,
}
RUN_TEXT_LIMITS = {"uuid": 64, "workload": 200, "dtype": 32, "label": MAX_LABEL,
                   "command": 10_000}
# Largest elementwise difference from eager that still counts as "correct", per dtype.
# One table for sweeps and serve runs (padded serve batches and compiled kernels both
# reorder reductions, so half precision needs the looser bound either way).
TOLERANCE = {"float32": 1e-4, "float64": 1e-9, "float16": 2e-2, "bfloat16": 5e-2}
# float32 computed on TF32 tensor cores (10-bit mantissa): cuDNN's default for convolutions
# (torch.backends.cudnn.allow_tf32 is True unless a user turns it off), so a conv network's
# compiled modes differ from eager by TF32 rounding wherever Inductor picks another
# algorithm or layout. Seen on the H200: timm resnet18, fp32, compile against eager 2.0e-4
# relative with cuDNN's TF32 on.
TF32_TOLERANCE = 2e-3
# train-step: parameters after N AdamW steps, judged by the relative L2 distance of a mode's
# update from eager's (||d_mode - d_eager|| / ||d_eager||), not elementwise: Adam's update is
# sign-like (lr * g / |g|) where a gradient is tiny, so an element whose gradient a
# reordered reduction rounds across zero moves 2 * lr the other way. Seen on the CPU: a
# compiled transformer block 1.2e-3 off elementwise (relative to the largest weight) while
# the training step is the same. A real fault (a stale input, a lost optimizer step, wrong
# grads) is off by tens of percent.
TRAIN_TOLERANCE = {"float32": 1e-2, "float64": 1e-6, "float16": 1e-1, "bfloat16": 1e-1}
# What any imported bundle may hold, checked once over the whole document
# (contract/bundle.py, check_plain) before any field is read, so SQLite and
# PostgreSQL see the same accepted values and a page never meets a monster.
MAX_BUNDLE_BYTES = 20 << 20          # the whole file (the /import upload limit too)
MAX_JSON_DEPTH = 16                  # nesting of objects and lists (samples use 8)
MAX_STRING = 100_000                 # any one string, keys included
MAX_MESSAGE = 10_000                 # a point's message
MAX_LIST = 100_000                   # items in any one list (samples, a serve stream)
MAX_NODES = 2_000_000                # values in the whole document
MAX_POINTS = MAX_BATCH_SIZES * 4     # measurements: every mode at every batch size
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MAX = 2**31 - 1                # an INTEGER column on PostgreSQL
# The regression gate's default (`check --threshold`, 5%): a slowdown the intervals call
# real but smaller than this does not fail a build; a point whose noise would hide one
# this large cannot tell, and the Trends page says so in amber, not green.
REGRESSION_THRESHOLD = 0.05
# Heartbeats: how often a writer (a worker, a sweep writing to the database) says it is
# alive, and the silence after which its run or job counts as lost. One figure for runs,
# jobs and workers: readers decide "lost" with it at read time, writers persist it.
HEARTBEAT_S = 5.0
LOST_AFTER_S = 60.0
# The queue, which a writable dashboard opens to anyone who can reach it: a dashboard
# session may not queue while the queue holds MAX_QUEUED_JOBS waiting jobs, or while it
# has MAX_QUEUED_PER_SESSION of its own. A full sweep takes minutes, so more than this is
# a runaway script, not a user. (`runner enqueue` is not capped: its user has the
# database and can run sweeps directly.)
MAX_QUEUED_JOBS = 100
MAX_QUEUED_PER_SESSION = 5
# A job's memory bound: its estimated peak (contract/specs.py estimate_cost) must fit
# in this share of the target's memory. When the target's memory is unknown (a queued job
# may go to any worker) the bound uses DEFAULT_GPU_MEMORY_BYTES, the memory of the
# 80 GiB data-centre GPUs (A100 80GB, H100 80GB) the queue is meant for; a worker checks
# again against its own GPU before measuring.
MEMORY_HEADROOM = 0.9
DEFAULT_GPU_MEMORY_BYTES = 80 << 30
# One profiled step kept per point (contract/trace.py): events in its timeline, and
# the length of one kernel's short name. A launch-bound step of the seed MLP has 128.
MAX_TRACE_EVENTS = 2000
MAX_TRACE_NAME = 200
# Trace events in one bundle: about a million values, well inside MAX_NODES, so a sweep of
# hundreds of points with full traces still writes a bundle (later points' traces are left
# out past this, never the points).
MAX_BUNDLE_TRACE_EVENTS = 200_000
