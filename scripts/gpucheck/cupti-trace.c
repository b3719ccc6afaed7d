/*
 * A CUPTI injection library that writes every kernel's GPU start and end
 * (kernels replayed from CUDA graphs included, each node on its own) to a CSV
 * file: "start_ns,end_ns,name" a line. The CUDA driver loads it into any
 * process started with CUDA_INJECTION64_PATH set to it, so it traces a Go
 * binary that calls the driver through purego as well as any other; the
 * device host has CUPTI but no Nsight Systems importer.
 *
 *   gcc -O2 -shared -fPIC -o libcupti-trace.so scripts/gpucheck/cupti-trace.c \
 *       -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcupti -lpthread
 *   CUDA_INJECTION64_PATH=$PWD/libcupti-trace.so CUPTI_TRACE_OUT=kernels.csv laya-bench ...
 *   python3 scripts/gpucheck/kernel-gaps.py kernels.csv
 *
 * CONCURRENT_KERNEL (not KERNEL, which serializes launches) keeps the
 * program's own overlap, so programmatic dependent launch shows as kernels
 * whose intervals overlap. A Go program leaves through the exit_group system
 * call, which runs no atexit handler, so records are not kept for the end:
 * a thread of ours has CUPTI hand every buffer back, full or not, every 20
 * ms (and at a context's destruction), and each is written out at once. The
 * last few milliseconds of a process may be missing; kernel-gaps.py reads
 * only whole forwards.
 */
#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel10 kernel_record;
#else
typedef CUpti_ActivityKernel9 kernel_record;
#endif

#define BUF_SIZE (256 << 10)

static FILE *out;

static void CUPTIAPI requested(uint8_t **buffer, size_t *size, size_t *maxRecords) {
	*buffer = aligned_alloc(8, BUF_SIZE);
	*size = *buffer ? BUF_SIZE : 0;
	*maxRecords = 0;
}

static void CUPTIAPI completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
	CUpti_Activity *rec = NULL;
	(void)size;
	while (out && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
		if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
			kernel_record *k = (kernel_record *)rec;
			fprintf(out, "%llu,%llu,%s\n", (unsigned long long)k->start, (unsigned long long)k->end,
				k->name ? k->name : "?");
		}
	}
	size_t dropped = 0;
	if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
		fprintf(stderr, "cupti-trace: %zu records dropped\n", dropped);
	if (out)
		fflush(out);
	free(buffer);
}

static void finish(void) {
	cuptiActivityFlushAll(1);
	if (out) {
		fclose(out);
		out = NULL;
	}
}

static void CUPTIAPI onDriver(void *data, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void *info) {
	const CUpti_CallbackData *cb = info;
	(void)data;
	if (domain == CUPTI_CB_DOMAIN_DRIVER_API && id == CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2 &&
	    cb->callbackSite == CUPTI_API_ENTER)
		cuptiActivityFlushAll(1);
}

static void *flusher(void *arg) {
	struct timespec pause = {0, 20 * 1000 * 1000};
	(void)arg;
	for (;;) {
		nanosleep(&pause, NULL);
		cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	}
	return NULL;
}

int InitializeInjection(void) {
	CUpti_SubscriberHandle sub;
	pthread_t th;
	const char *path = getenv("CUPTI_TRACE_OUT");
	out = fopen(path && *path ? path : "kernels.csv", "w");
	if (!out) {
		perror("cupti-trace");
		return 0;
	}
	if (cuptiActivityRegisterCallbacks(requested, completed) != CUPTI_SUCCESS ||
	    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
		fprintf(stderr, "cupti-trace: could not enable kernel activity\n");
		return 0;
	}
	pthread_create(&th, NULL, flusher, NULL);
	pthread_detach(th);
	if (cuptiSubscribe(&sub, (CUpti_CallbackFunc)onDriver, NULL) == CUPTI_SUCCESS)
		cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2);
	atexit(finish);
	return 1;
}
