"""Which tests of torch's distributed suite weft runs beyond the suite's own gates, and which it
skips, each with its reason.

The suite gates many CPU tests on backend names ({'gloo'}, {'nccl', 'gloo'}, 'Only MPI ...')
because those were the CPU backends when the tests were written. UNGATED lists the ones whose
CPU semantics weft implements, so they run against weft too. SKIPS lists the tests weft does
not pass, with why.
"""

UNGATED = [
    # Work.get_future (DDP communication hooks rely on it). The test_accumulate_gradients_*
    # tests that share this gate build their model only for gloo, mpi or nccl, by name.
    "test_get_future",
    # Object collectives (pickled byte tensors over all_gather, gather, broadcast, scatter).
    "test_all_gather_object_default_pg",
    "test_all_gather_object_subgroup",
    "test_gather_object",
    "test_gather_object_subgroup",
    "test_broadcast_object_list",
    "test_scatter_object_list",
    # allreduce_coalesced.
    "test_all_reduce_coalesced_max",
    "test_all_reduce_coalesced_min",
    "test_all_reduce_coalesced_product",
    "test_all_reduce_coalesced_sum",
    "test_all_reduce_coalesced_group_max",
    "test_all_reduce_coalesced_group_min",
    "test_all_reduce_coalesced_group_product",
    "test_all_reduce_coalesced_group_sum",
    "test_all_reduce_coalesced_full_group_max",
    "test_all_reduce_coalesced_full_group_min",
    "test_all_reduce_coalesced_full_group_product",
    "test_all_reduce_coalesced_full_group_sum",
    # all_to_all and all_to_all_single on CPU tensors.
    "test_all_to_all",
    "test_all_to_all_complex",
    "test_all_to_all_full_group",
    "test_all_to_all_group",
    "test_all_to_all_single_equal_split",
    "test_all_to_all_single_equal_split_complex",
    "test_all_to_all_single_equal_split_full_group",
    "test_all_to_all_single_equal_split_group",
    "test_all_to_all_single_unequal_split",
    "test_all_to_all_single_unequal_split_complex",
    "test_all_to_all_single_unequal_split_full_group",
    "test_all_to_all_single_unequal_split_group",
    # batch_isend_irecv on CPU tensors.
    "test_batch_isend_irecv_gloo",
    "test_batch_isend_irecv_gloo_tags",
    # DDP on CPU.
    "test_compute_bucket_assignment_by_size_sparse_error_with_logger",
    "test_compute_bucket_assignment_by_size_sparse_error_without_logger",
    "test_ddp_build_debug_param_to_name_mapping",
    "test_ddp_control_flow_different_across_ranks",
    "test_ddp_control_flow_same_across_ranks",
    "test_ddp_device",
    "test_ddp_forward_backward_hook",
    "test_ddp_ignore_params_arg",
    "test_ddp_model_diff_num_params_across_ranks",
    "test_ddp_model_diff_shape_across_ranks",
    "test_ddp_multiple_nested_unused_params_err_ignore_params",
    "test_ddp_multiple_nested_unused_params_error",
    "test_ddp_namedtuple",
    "test_ddp_profiling_autograd_profiler",
    "test_ddp_profiling_torch_profiler",
    "test_ddp_shared_grad_acc_unused_params",
    "test_ddp_unused_params_rebuild_buckets_exception",
    "test_different_graph_across_ranks",
    "test_invalid_static_graph",
    "test_verify_model_across_rank_with_logger",
    "test_verify_model_across_rank_without_logger",
    "test_sync_bn_logged",
    # Barrier with a timeout: ungated so that SKIPS gives the real reason they do not pass.
    "test_barrier_timeout_group",
    "test_barrier_timeout_global",
    "test_barrier_timeout_full_group",
]

_GLOO_TIMEOUT_WORDING = (
    "checks gloo's wording of the timeout (the regex ' (Timed out|closed|timeout) '); weft "
    "raises on time, on every rank, with its own message: 'weft: barrier failed: timed out: "
    "timed out after 1 s in barrier #1 (dissemination), waiting for rank 1 (host:pid ...)'"
)

SKIPS = {
    "test_barrier_timeout_global": _GLOO_TIMEOUT_WORDING,
    "test_barrier_timeout_group": _GLOO_TIMEOUT_WORDING,
    "test_barrier_timeout_full_group": _GLOO_TIMEOUT_WORDING,
}

# The selection CI runs (run_distributed_suite.py --ci): one test per collective, DDP, futures,
# groups and batches, about 40 s here.
CI_SELECTION = [
    "test_all_reduce_sum_async",
    "test_all_reduce_sum_complex",
    "test_all_reduce_coalesced_sum",
    "test_broadcast_object_list",
    "test_all_gather",
    "test_reduce_max",
    "test_gather",
    "test_scatter",
    "test_all_to_all_single_unequal_split",
    "test_barrier",
    "test_send_recv_with_tag",
    "test_batch_isend_irecv_gloo",
    "test_get_future",
    "test_DistributedDataParallelCPU",
    "test_destroy_group",
]
