// Control interface of the fake libibverbs (libweft_fake_verbs.so), for tests that load it in
// place of the real library. Tests usually reach these through dlsym, as they reach the verbs,
// so the function pointer types are spelled out too.
//
// Environment, read at each ibv_get_device_list (the names) or ibv_open_device (the rest):
//   WEFT_FAKE_VERBS_DEVICES     comma-separated device names (default fake0); empty: no RDMA
//                               (ibv_get_device_list returns NULL, errno ENOSYS)
//   WEFT_FAKE_VERBS_PORT_STATE  active (default), init or down
//   WEFT_FAKE_VERBS_GIDS        roce2 (default: 0 fe80:: RoCE v1, 1 ::ffff:127.0.0.1 RoCE v2),
//                               ib (InfiniBand link layer, a LID, one IB GID) or none (no GIDs)
//   WEFT_FAKE_VERBS_DELAY_US    fixed delay before each WR executes (default 0-20 us jitter)
//   WEFT_FAKE_VERBS_FAULTS      commands, see below
//
// Commands (also accepted, separated by ';', in WEFT_FAKE_VERBS_FAULTS, which is read at the
// first ibv_open_device after load or after `reset`):
//   lose_completion N  the N-th next completion (any CQ, 1 = the next) is dropped; data lands
//   fail_reg_mr N      the N-th next ibv_reg_mr fails (NULL, errno ENOMEM)
//   fail_create_qp N   the N-th next ibv_create_qp fails (NULL, errno ENOMEM)
//   kill_context K     the K-th context opened since load or `reset` (0-based) dies: its QPs stop
//                      answering, its own work never completes and its CQs stay empty
//   delay_us N         each work request executes N microseconds after it was posted
//   reset              clears the faults, the counters above and the delay
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

// Returns 0, or -1 for a command it does not know.
int weft_fake_verbs_control(const char* command);

// Contexts, PDs, MRs, CQs, QPs, completion channels and device lists currently allocated.
int weft_fake_verbs_live_objects(void);

typedef int (*weft_fake_verbs_control_fn)(const char* command);
typedef int (*weft_fake_verbs_live_objects_fn)(void);

#ifdef __cplusplus
}
#endif
