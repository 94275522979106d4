/* weft alongside MPI: a weft communicator over the processes of an MPI communicator, for MPI
 * programs that use weft for their collectives (as NCCL users broadcast ncclUniqueId with MPI).
 * Header-only and optional: include it after <mpi.h> is available; libweft does not depend on MPI.
 *
 *   MPI_Init(&argc, &argv);
 *   weftComm_t comm;
 *   weftCommInitFromMPI(MPI_COMM_WORLD, &comm);   // collective over MPI_COMM_WORLD
 *
 * Rank r of mpiComm becomes rank r of the weft communicator. Rank 0 makes the unique id (its
 * rendezvous address and a fresh secret) and MPI broadcasts it, so the secret travels only
 * through MPI. If rank 0 cannot make the id, every rank returns its error code. */
#ifndef WEFT_WEFT_MPI_H_
#define WEFT_WEFT_MPI_H_

#include <mpi.h>
#include <string.h>

#include "weft/weft.h"

#ifdef __cplusplus
extern "C" {
#endif

/* As weftCommInitFromMPI, with a config (NULL for the defaults). MPI errors are weftSystemError;
 * MPI's own error handler may abort before that, as MPI_ERRORS_ARE_FATAL does by default. */
static inline weftResult_t weftCommInitFromMPIConfig(MPI_Comm mpiComm, weftComm_t* comm,
                                                     const weftConfig_t* config) {
  struct {
    int result; /* rank 0's weftGetUniqueId result, so that a failure fails every rank */
    weftUniqueId id;
  } root;
  int rank = 0, nranks = 0;
  if (comm == NULL) return weftInvalidArgument;
  if (MPI_Comm_rank(mpiComm, &rank) != MPI_SUCCESS) return weftSystemError;
  if (MPI_Comm_size(mpiComm, &nranks) != MPI_SUCCESS) return weftSystemError;
  memset(&root, 0, sizeof(root));
  if (rank == 0) root.result = (int)weftGetUniqueId(&root.id);
  if (MPI_Bcast(&root, (int)sizeof(root), MPI_BYTE, 0, mpiComm) != MPI_SUCCESS) {
    return weftSystemError;
  }
  if (root.result != (int)weftSuccess) return (weftResult_t)root.result;
  return weftCommInitRankConfig(comm, nranks, root.id, rank, config);
}

/* Collective over mpiComm: every process of it gets the weft communicator of the same ranks. */
static inline weftResult_t weftCommInitFromMPI(MPI_Comm mpiComm, weftComm_t* comm) {
  return weftCommInitFromMPIConfig(mpiComm, comm, NULL);
}

#ifdef __cplusplus
}
#endif

#endif /* WEFT_WEFT_MPI_H_ */
