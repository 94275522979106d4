# Fails unless the fake library's dynamic symbol table defines exactly the expected functions.
# Run by ctest: cmake -DLIBRARY=<libweft_fake_verbs.so> -DNM=<nm> -P check_exports.cmake
set(expected
  _ibv_query_gid_ex ibv_ack_cq_events ibv_alloc_pd ibv_close_device ibv_create_comp_channel
  ibv_create_cq ibv_create_qp ibv_dealloc_pd ibv_dereg_mr ibv_destroy_comp_channel
  ibv_destroy_cq ibv_destroy_qp ibv_fork_init ibv_free_device_list ibv_get_cq_event
  ibv_get_device_list ibv_get_device_name ibv_modify_qp ibv_open_device ibv_query_device
  ibv_query_gid ibv_query_port ibv_query_qp ibv_reg_mr ibv_wc_status_str
  weft_fake_verbs_control weft_fake_verbs_live_objects)

execute_process(COMMAND ${NM} -D --defined-only ${LIBRARY}
  OUTPUT_VARIABLE table RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${NM} failed on ${LIBRARY}")
endif()
string(REPLACE "\n" ";" lines "${table}")
set(exported)
foreach(line IN LISTS lines)
  # Code and data symbols; the sanitizers' runtimes add none of these to the library itself.
  if(line MATCHES "^[0-9a-f]+ [TWDBRVius] ([^ @]+)")
    list(APPEND exported ${CMAKE_MATCH_1})
  endif()
endforeach()
list(SORT exported)
list(SORT expected)
if(NOT exported STREQUAL expected)
  set(extra ${exported})
  list(REMOVE_ITEM extra ${expected})
  set(missing ${expected})
  list(REMOVE_ITEM missing ${exported})
  message(FATAL_ERROR "exported symbols differ.\n  unexpected: ${extra}\n  missing: ${missing}")
endif()
list(LENGTH exported count)
message(STATUS "${count} symbols exported, as expected")
