/* tg_dist.h: data-parallel work across processes (and machines) through
 * MPI. Started by mpirun, every process (a rank) calls tg_dist_init(), and
 * the ranks of the world then sum, average or take the maximum of tensors
 * (tg_dist_allreduce) and copy tensors from one rank to all
 * (tg_dist_broadcast). docs/distributed.md shows the commands.
 * #include "tg_dist.h" (it includes tg.h).
 *
 * The MPI library is opened at run time (dlopen), so building tg needs none:
 * libmpi.so.40 of Open MPI 4.x or 5.x (Debian: openmpi-bin libopenmpi-dev);
 * TG_MPI_LIB names another file. Other MPI implementations (MPICH, Intel
 * MPI) have another binary interface and are refused with an error that
 * says so. A process that mpirun did not start is a world of one (rank 0 of
 * 1) with no MPI at all: every collective is then a copy, so one program
 * serves both.
 *
 * Faults: MPI errors come back as errors (MPI_ERRORS_RETURN), never as
 * aborts. A collective that waits longer than TG_DIST_TIMEOUT seconds
 * (default 300) for the other ranks (one died or hangs) ends the process
 * with exit status 70 and a message naming the collective and the rank;
 * mpirun then stops the others. */
#ifndef TG_DIST_H
#define TG_DIST_H

#include "tg.h"

typedef enum { TG_DIST_SUM, TG_DIST_MEAN, TG_DIST_MAX } tg_dist_op;

/* Joins the world: rank and size from mpirun's environment (MPI_Init).
 * 0, or -1 with tg_error (no libmpi, another MPI, MPI_Init failed). Calling
 * it again is a no-op. */
TG_API int tg_dist_init(void);
/* This process's rank and the world's size: 0 and 1 before tg_dist_init or
 * outside mpirun. */
TG_API int tg_dist_rank(void);
TG_API int tg_dist_size(void);
/* What carries the world: "Open MPI v4.1.4 ..." or "single process". */
TG_API const char *tg_dist_backend(void);

/* Sum, mean or maximum of t over the ranks, element by element. Every rank
 * calls it with a tensor of the same shape and dtype (float32, float64,
 * int32, int64; mean: float32 and float64). _inplace writes the result into
 * t's own memory: t must be a realized, contiguous tensor (tg_realize);
 * on the CPU devices MPI reads and writes that memory directly, on a CUDA
 * device NCCL does on the GPU where every rank can load libnccl (TG_NCCL=0:
 * never), elsewhere it travels through host memory. The other form returns a new tensor on
 * t's device (NULL + tg_error). Returns 0 or -1. */
TG_API int tg_dist_allreduce_inplace(tg_tensor *t, tg_dist_op op);
TG_API tg_tensor *tg_dist_allreduce(tg_tensor *t, tg_dist_op op);
/* root's values of t on every rank (any dtype): in place, or as a new
 * tensor. */
TG_API int tg_dist_broadcast_inplace(tg_tensor *t, int root);
TG_API tg_tensor *tg_dist_broadcast(tg_tensor *t, int root);
/* The same on host memory: count elements of dt at buf. */
TG_API int tg_dist_allreduce_host(void *buf, int64_t count, tg_dtype dt, tg_dist_op op);
TG_API int tg_dist_broadcast_host(void *buf, size_t nbytes, int root);
/* Point to point on host memory: nbytes from this rank to rank dest, which
 * receives them with tg_dist_recv_host(buf, nbytes, this rank) (the same
 * size; messages between two ranks arrive in the order they were sent).
 * Watched as the collectives are (TG_DIST_TIMEOUT). 0 or -1. */
TG_API int tg_dist_send_host(const void *buf, size_t nbytes, int dest);
TG_API int tg_dist_recv_host(void *buf, size_t nbytes, int src);
/* Waits until every rank has called it. 0 or -1. */
TG_API int tg_dist_barrier(void);
/* Leaves the world (MPI_Finalize); rank and size go back to 0 and 1. */
TG_API int tg_dist_finalize(void);

/* ---- one process, several devices: sharded tensors (docs/distributed.md)
 *
 * tg_shard(t, devices, n, axis) is one tensor whose parts live on the n
 * devices ("CPU", "CPU:1", ...): t cut into n equal parts along axis (its
 * size must divide by n), or, with axis -1, a whole copy on each device
 * (replicated). Every op takes it like any tensor: elementwise and movement
 * ops run part by part (a reshape or permute follows the sharded axis), a
 * reduction over the sharded axis reduces each part and then sums the
 * partial results across the devices (an allreduce the scheduler places:
 * naive, or ring on more than 2 devices and large sizes; TG_RING=0 never,
 * TG_RING=2 always), matmul with one operand sharded (batch rows, or a
 * weight by rows or columns) stays sharded or allreduces. tg_to(s, dev),
 * tg_data and tg_item gather the parts. An op of a sharded tensor and one
 * on a single device is an error that names both (shard the other too, or
 * tg_to it); tg_device_of says "CPU,CPU:1". NULL with tg_error on a bad
 * axis, an uneven size, a device that is not present, or more than 16. */
TG_API tg_tensor *tg_shard(tg_tensor *t, const char *const *devices, int n, int axis);
/* The axis a tensor is sharded on: -1 replicated, -2 not sharded (and for
 * NULL, with tg_error set). */
TG_API int tg_shard_axis(const tg_tensor *t);

#endif
