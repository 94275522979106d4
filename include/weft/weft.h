/*
 * weft: collective communication among N processes.
 *
 * This is the library's only public header. It is plain C (usable from C99 and C++), every handle
 * is opaque, and nothing here throws. The shape follows NCCL so that its users feel at home:
 * a unique id created by one rank and shared out of band, communicators, collectives with
 * NCCL's argument order, and result codes with a last-error text. Unlike NCCL, every call takes a
 * trailing request pointer: NULL means "block until the result is in place"; non-NULL means
 * "return at once" and weftTest / weftWait complete the call later. Calls on one communicator
 * execute in the order they were issued and progress on their own (a per-communicator progress
 * thread), so computation can overlap communication without polling.
 */
#ifndef WEFT_WEFT_H_
#define WEFT_WEFT_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define WEFT_API
#else
#define WEFT_API __attribute__((visibility("default")))
#endif

/* The one place the version is written: CMake reads it from here, and so do the tools. */
#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1
#define WEFT_VERSION_PATCH 0
#define WEFT_VERSION(X, Y, Z) ((X)*10000 + (Y)*100 + (Z))
#define WEFT_VERSION_CODE WEFT_VERSION(WEFT_VERSION_MAJOR, WEFT_VERSION_MINOR, WEFT_VERSION_PATCH)
#define WEFT_STRINGIFY_(x) #x
#define WEFT_STRINGIFY(x) WEFT_STRINGIFY_(x)
/* "0.1.0" */
#define WEFT_VERSION_STRING          \
  WEFT_STRINGIFY(WEFT_VERSION_MAJOR) \
  "." WEFT_STRINGIFY(WEFT_VERSION_MINOR) "." WEFT_STRINGIFY(WEFT_VERSION_PATCH)

/* Result codes. The numbering matches NCCL's where the meaning is the same. */
typedef enum {
  weftSuccess = 0,
  weftSystemError = 2,     /* a system call failed (socket, mmap, thread, ...) */
  weftInternalError = 3,   /* a bug in weft; please report it with the last-error text */
  weftInvalidArgument = 4, /* an argument is wrong; the message names it */
  weftInvalidUsage = 5,    /* the call is wrong in this state (e.g. ranks disagree) */
  weftRemoteError = 6,     /* a peer failed or vanished; the message names it */
  weftInProgress = 7,      /* an operation has not completed yet (weftTest) */
  weftTimeout = 8,         /* a wait passed its deadline; the message names what was awaited */
  weftAborted = 9,         /* the communicator was aborted */
  weftNumResults = 10
} weftResult_t;

typedef enum {
  weftInt8 = 0,
  weftChar = 0,
  weftUint8 = 1,
  weftInt32 = 2,
  weftInt = 2,
  weftUint32 = 3,
  weftInt64 = 4,
  weftUint64 = 5,
  weftFloat16 = 6,
  weftHalf = 6,
  weftFloat32 = 7,
  weftFloat = 7,
  weftFloat64 = 8,
  weftDouble = 8,
  weftBfloat16 = 9,
  weftNumTypes = 10
} weftDataType_t;

/* weftAvg: sum, then divide (integers, truncating) or multiply by 1/nranks (floating point). */
typedef enum {
  weftSum = 0,
  weftProd = 1,
  weftMax = 2,
  weftMin = 3,
  weftAvg = 4,
  weftNumOps = 5
} weftRedOp_t;

typedef struct weftComm* weftComm_t;
typedef struct weftRequestImpl* weftRequest_t;

/* Holds the root's address and a random 256-bit secret. Treat it as a password: anyone holding it
 * can join the communicator. Share it with the other ranks over a channel you trust. */
#define WEFT_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[WEFT_UNIQUE_ID_BYTES];
} weftUniqueId;

/* Communicator options. Always start from WEFT_CONFIG_INITIALIZER; fields left at their
 * "undefined" values take the environment's value or the default. Environment variables override
 * the fields you set (as NCCL does), so a job can be tuned without recompiling. */
#define WEFT_CONFIG_MAGIC 0x77656674u /* "weft" */
#define WEFT_CONFIG_UNDEF_INT INT32_MIN
#define WEFT_CONFIG_UNDEF_PTR NULL

typedef struct weftConfig_v1 {
  size_t size;           /* sizeof(weftConfig_t); set by the initializer */
  unsigned int magic;    /* WEFT_CONFIG_MAGIC; set by the initializer */
  unsigned int version;  /* WEFT_VERSION_CODE of the header; set by the initializer */
  int timeoutMs;         /* deadline of every internal wait (WEFT_TIMEOUT, in seconds) */
  int nSocks;            /* TCP sockets per peer for large messages (WEFT_NSOCKS) */
  const char* transport; /* force one transport, e.g. "tcp" (WEFT_TRANSPORT) */
  const char* hostId;    /* override the host identity (WEFT_HOSTID) */
  const char* commName;  /* a label printed in log lines and error messages */
  int checkMode;         /* 1: ranks compare each collective's arguments first (WEFT_CHECK) */
  int buffers;           /* WEFT_BUFFERS_*: where call buffers live (WEFT_BUFFERS) */
} weftConfig_t;

/* weftConfig_t.buffers. AUTO asks the GPU runtime for each call's buffers, but only in a
 * process that has loaded the CUDA driver; a process that never has gets host memory without
 * weft touching the driver. HOST and DEVICE declare it instead (no lookup; DEVICE for memory the
 * lookup cannot classify). */
#define WEFT_BUFFERS_AUTO 0
#define WEFT_BUFFERS_HOST 1
#define WEFT_BUFFERS_DEVICE 2

#define WEFT_CONFIG_INITIALIZER                                                        \
  {                                                                                    \
    sizeof(weftConfig_t), WEFT_CONFIG_MAGIC, WEFT_VERSION_CODE, WEFT_CONFIG_UNDEF_INT, \
        WEFT_CONFIG_UNDEF_INT, WEFT_CONFIG_UNDEF_PTR, WEFT_CONFIG_UNDEF_PTR,           \
        WEFT_CONFIG_UNDEF_PTR, WEFT_CONFIG_UNDEF_INT, WEFT_CONFIG_UNDEF_INT            \
  }

/* ---- Version, errors ---------------------------------------------------------------------- */

/* Writes WEFT_VERSION_CODE of the library (which may differ from the header's). */
WEFT_API weftResult_t weftGetVersion(int* version);
/* A static string describing a result code. */
WEFT_API const char* weftGetErrorString(weftResult_t result);
/* The message of the last error seen by this thread on comm (or on any communicator when comm is
 * NULL), naming the argument, peer or operation at fault. Never NULL; "" when there was none. */
WEFT_API const char* weftGetLastError(weftComm_t comm);

/* ---- Communicators ------------------------------------------------------------------------ */

/* Creates a unique id whose holder is the rendezvous root: this process listens until all ranks
 * of one communicator have joined. Call it on one process, share the bytes with the others. */
WEFT_API weftResult_t weftGetUniqueId(weftUniqueId* uniqueId);

/* Collective over nranks processes (or threads) that all pass the same id. */
WEFT_API weftResult_t weftCommInitRank(weftComm_t* comm, int nranks, weftUniqueId commId, int rank);
WEFT_API weftResult_t weftCommInitRankConfig(weftComm_t* comm, int nranks, weftUniqueId commId,
                                             int rank, const weftConfig_t* config);

/* Reads rank, size and rendezvous from the launcher that started the process: weftrun
 * (WEFT_RANK, WEFT_NRANKS, WEFT_ROOT_ADDR), torchrun (RANK, WORLD_SIZE, LOCAL_RANK,
 * LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), Open MPI's mpirun and srun --mpi=pmix (through
 * their PMIx server), MPICH's and Intel MPI's Hydra (through PMI-1), Slurm (SLURM_PROCID,
 * SLURM_NTASKS, SLURM_LOCALID, the step's node list), MVAPICH (with WEFT_ROOT_ADDR). Through
 * PMIx and PMI-1 a fresh secret travels in the launcher's key-value store; otherwise it comes from
 * WEFT_SECRET when that is set. With no launcher variables at all, the process becomes a
 * communicator of one rank; variables that claim several ranks never do. config may be NULL. */
WEFT_API weftResult_t weftCommInitFromEnv(weftComm_t* comm, const weftConfig_t* config);

#define WEFT_SPLIT_NOCOLOR (-1)
/* Collective over comm: ranks passing the same color form a new communicator, ordered by key
 * (then by rank in comm). WEFT_SPLIT_NOCOLOR yields *newcomm == NULL. config may be NULL. */
WEFT_API weftResult_t weftCommSplit(weftComm_t comm, int color, int key, weftComm_t* newcomm,
                                    const weftConfig_t* config);

/* Waits for the communicator's queued calls, then frees it. Local: peers are not contacted.
 * NULL is accepted and does nothing (as in NCCL), for both Destroy and Abort. */
WEFT_API weftResult_t weftCommDestroy(weftComm_t comm);
/* Cancels queued and running calls (they complete with weftAborted) and frees the communicator.
 * Safe to call from another thread while a call is blocked; it returns without waiting on peers. */
WEFT_API weftResult_t weftCommAbort(weftComm_t comm);
/* weftSuccess, or the error that put the communicator in a failed state (a dead peer, a timeout,
 * an abort). Once failed, a communicator only accepts destroy and abort. */
WEFT_API weftResult_t weftCommGetAsyncError(weftComm_t comm, weftResult_t* asyncError);
WEFT_API weftResult_t weftCommCount(const weftComm_t comm, int* count);
WEFT_API weftResult_t weftCommUserRank(const weftComm_t comm, int* rank);

/* ---- Completion --------------------------------------------------------------------------- */

/* *done = 1 once the call has completed; the request is then released and *request set to NULL,
 * and the call's own result is returned. While it runs, *done = 0 and weftSuccess is returned. */
WEFT_API weftResult_t weftTest(weftRequest_t* request, int* done);
/* Waits until the call completes (returning its result and releasing the request, as weftTest
 * does) or until timeoutMs passes (returning weftTimeout; the request stays valid and the call
 * keeps running). timeoutMs < 0 waits without a limit of its own (the communicator's still holds).
 */
WEFT_API weftResult_t weftWait(weftRequest_t* request, int timeoutMs);

/* ---- Collectives --------------------------------------------------------------------------
 * Counts are in elements. In place means sendbuff == recvbuff, or for AllGather
 * sendbuff == recvbuff + rank * sendcount, for ReduceScatter recvbuff == sendbuff + rank *
 * recvcount (NCCL's rules). request == NULL blocks; otherwise *request receives a handle.      */

WEFT_API weftResult_t weftAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                    weftDataType_t datatype, weftRedOp_t op, weftComm_t comm,
                                    weftRequest_t* request);
/* recvbuff receives root's sendbuff (sendbuff is read on root only). */
WEFT_API weftResult_t weftBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                    weftDataType_t datatype, int root, weftComm_t comm,
                                    weftRequest_t* request);
/* recvbuff is written on root only. */
WEFT_API weftResult_t weftReduce(const void* sendbuff, void* recvbuff, size_t count,
                                 weftDataType_t datatype, weftRedOp_t op, int root, weftComm_t comm,
                                 weftRequest_t* request);
/* recvbuff holds nranks * sendcount elements, rank r's block at r * sendcount. */
WEFT_API weftResult_t weftAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                    weftDataType_t datatype, weftComm_t comm,
                                    weftRequest_t* request);
/* sendbuff holds nranks * recvcount elements; rank r receives the reduction of block r. */
WEFT_API weftResult_t weftReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                        weftDataType_t datatype, weftRedOp_t op, weftComm_t comm,
                                        weftRequest_t* request);
/* Block j of sendbuff (count elements at j * count) goes to rank j; block i of recvbuff comes from
 * rank i. In place (sendbuff == recvbuff) is allowed. */
WEFT_API weftResult_t weftAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                                   weftDataType_t datatype, weftComm_t comm,
                                   weftRequest_t* request);
/* Root's recvbuff (nranks * sendcount elements) receives rank r's sendbuff at r * sendcount. */
WEFT_API weftResult_t weftGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                 weftDataType_t datatype, int root, weftComm_t comm,
                                 weftRequest_t* request);
/* Rank r's recvbuff receives root's sendbuff block r (recvcount elements at r * recvcount). */
WEFT_API weftResult_t weftScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                  weftDataType_t datatype, int root, weftComm_t comm,
                                  weftRequest_t* request);
WEFT_API weftResult_t weftBarrier(weftComm_t comm, weftRequest_t* request);

/* Point to point. Messages between two ranks match in the order they were posted, per
 * direction, collectives' messages included; count and datatype must agree on both sides.
 * Given a request (outside a group), a Send or Recv is posted and left outstanding: the calls
 * after it run while it waits for its peer, and the request completes when its transfer does,
 * so two ranks may both post their Send (or both their Recv) first, as with MPI_Isend/Irecv.
 * A blocking Send or Recv returns once its transfer is done, as NCCL's do: two ranks that both
 * block in a Send to each other wait until the timeout once the message outgrows the
 * transport's buffering; give one side requests, or pair them in a group. */
WEFT_API weftResult_t weftSend(const void* sendbuff, size_t count, weftDataType_t datatype,
                               int peer, weftComm_t comm, weftRequest_t* request);
WEFT_API weftResult_t weftRecv(void* recvbuff, size_t count, weftDataType_t datatype, int peer,
                               weftComm_t comm, weftRequest_t* request);

/* ---- Device (CUDA) buffers and stream-ordered calls ---------------------------------------
 * Every call above accepts device pointers (cudaMalloc memory; weftConfig_t.buffers says how
 * weft tells them from host memory). Both buffers of a call must live in the same kind of
 * memory, on every rank of the call (check mode catches ranks that differ), and device buffers
 * of one communicator on one GPU. A blocking call returns when the
 * result is in device memory; as with CUDA-aware MPI, its input must be ready when it is made
 * (synchronise the stream that produced it first).
 *
 * The calls below are NCCL's stream-ordered form: `stream` is a cudaStream_t (passed as a
 * void*, so host-only code needs no CUDA header; NULL is the legacy default stream). The call
 * is queued behind the work already on the stream and returns at once; work queued on the
 * stream afterwards waits for its result. Errors of the call itself (arguments) are returned;
 * a failure while it runs (a dead peer, a timeout) releases the stream, leaves the result
 * undefined and is reported by weftCommGetAsyncError and by the communicator's later calls.
 * Inside weftGroupStart/End they join the group like the other calls. In a weft built
 * without CUDA they return weftInvalidUsage.                                                   */

WEFT_API weftResult_t weftAllReduceOnStream(const void* sendbuff, void* recvbuff, size_t count,
                                            weftDataType_t datatype, weftRedOp_t op,
                                            weftComm_t comm, void* stream);
WEFT_API weftResult_t weftBroadcastOnStream(const void* sendbuff, void* recvbuff, size_t count,
                                            weftDataType_t datatype, int root, weftComm_t comm,
                                            void* stream);
WEFT_API weftResult_t weftReduceOnStream(const void* sendbuff, void* recvbuff, size_t count,
                                         weftDataType_t datatype, weftRedOp_t op, int root,
                                         weftComm_t comm, void* stream);
WEFT_API weftResult_t weftAllGatherOnStream(const void* sendbuff, void* recvbuff, size_t sendcount,
                                            weftDataType_t datatype, weftComm_t comm, void* stream);
WEFT_API weftResult_t weftReduceScatterOnStream(const void* sendbuff, void* recvbuff,
                                                size_t recvcount, weftDataType_t datatype,
                                                weftRedOp_t op, weftComm_t comm, void* stream);
WEFT_API weftResult_t weftAlltoAllOnStream(const void* sendbuff, void* recvbuff, size_t count,
                                           weftDataType_t datatype, weftComm_t comm, void* stream);
WEFT_API weftResult_t weftGatherOnStream(const void* sendbuff, void* recvbuff, size_t sendcount,
                                         weftDataType_t datatype, int root, weftComm_t comm,
                                         void* stream);
WEFT_API weftResult_t weftScatterOnStream(const void* sendbuff, void* recvbuff, size_t recvcount,
                                          weftDataType_t datatype, int root, weftComm_t comm,
                                          void* stream);
WEFT_API weftResult_t weftBarrierOnStream(weftComm_t comm, void* stream);
WEFT_API weftResult_t weftSendOnStream(const void* sendbuff, size_t count, weftDataType_t datatype,
                                       int peer, weftComm_t comm, void* stream);
WEFT_API weftResult_t weftRecvOnStream(void* recvbuff, size_t count, weftDataType_t datatype,
                                       int peer, weftComm_t comm, void* stream);

/* Calls made between GroupStart and GroupEnd (on this thread) are collected and issued together at
 * GroupEnd: point-to-point calls of a group progress concurrently, collectives in issue order.
 * GroupEnd returns once the calls given a NULL request have completed; the others complete through
 * their requests. Groups nest; only the outermost GroupEnd issues. */
WEFT_API weftResult_t weftGroupStart(void);
WEFT_API weftResult_t weftGroupEnd(void);

/* ---- Memory, registration and windows ------------------------------------------------------
 * Zero-copy buffers, in NCCL's shapes (ncclMemAlloc, ncclCommRegister, ncclCommWindowRegister).
 * Any buffer works with every call; these make large calls faster where the transport can use
 * them, and change nothing else (results and rounding are the same). docs/MEMORY.md has the
 * details and the measurements.
 *
 * weftMemAlloc returns host memory that the other ranks of this host can map: page-aligned,
 * zero-filled, at least size bytes, usable as any other memory. On a host where every rank's
 * buffers come from it, the shared-memory algorithms read and reduce peers' buffers in place
 * instead of copying them through the kernel or staging windows. The memory is shared with a
 * child made by fork (a shared mapping), and is released by weftMemFree (or at exit); a peer that
 * still has it mapped keeps the pages until it drops them (at the latest when its communicators
 * are destroyed). A call given memory freed by weftMemFree (one of the last 256 frees) fails naming
 * the buffer. */
WEFT_API weftResult_t weftMemAlloc(void** ptr, size_t size);
WEFT_API weftResult_t weftMemFree(void* ptr);

/* Registers [buff, buff + size) with comm, for calls on comm whose buffers lie inside it (local:
 * the other ranks need not register). Where a transport can use a registration (rdma pins it
 * once instead of through its registration cache) it does; memory from weftMemAlloc is used in
 * place whether registered or not. *handle is released with weftCommDeregister (or when comm is
 * destroyed); registrations may overlap. */
WEFT_API weftResult_t weftCommRegister(const weftComm_t comm, void* buff, size_t size,
                                       void** handle);
WEFT_API weftResult_t weftCommDeregister(const weftComm_t comm, void* handle);

/* A window: collective over comm, every rank giving a buffer of the same size from weftMemAlloc.
 * With WEFT_WIN_COLL_SYMMETRIC the ranks promise that the collectives whose buffers lie in the
 * window use them alike on every rank; on one host with shared memory weft then chooses the
 * zero-copy algorithms for this communicator's calls at every size (each rank maps the others'
 * memory at its first call and keeps it mapped). A call whose buffers break the promise still
 * completes correctly, more slowly. weftCommWindowDeregister is collective too, and returns once
 * no rank can still read this rank's window. */
typedef struct weftWindow* weftWindow_t;
#define WEFT_WIN_DEFAULT 0x00
#define WEFT_WIN_COLL_SYMMETRIC 0x01
WEFT_API weftResult_t weftCommWindowRegister(weftComm_t comm, void* buff, size_t size,
                                             weftWindow_t* win, int winFlags);
WEFT_API weftResult_t weftCommWindowDeregister(weftComm_t comm, weftWindow_t win);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_WEFT_H_ */
