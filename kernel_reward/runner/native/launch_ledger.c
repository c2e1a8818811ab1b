/* The launch ledger: every GPU kernel that runs in this process, recorded below Python by CUPTI's activity API
 * and written as text lines to a file descriptor the judge opened (launch_ledger.py builds, loads and reads it).
 *
 *   K <tab> name <tab> start_ns <tab> end_ns <tab> correlation_id <tab> stream_id   one line per kernel
 *   M <tab> marker                                                                  after each ledger_flush
 *   D <tab> dropped_records                                                         when CUPTI dropped some
 *
 * CUPTI hands over full buffers on its own thread; ledger_flush forces the partial ones out, then writes its
 * marker, so every kernel that finished before the flush is on the descriptor before the marker. The lines are
 * written with write(2) from C: nothing of it is a Python object. */
#include <cupti.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LEDGER_BUFFER_BYTES (4u << 20)
#define LEDGER_ALIGN 8

static int ledger_fd = -1;
static int ledger_write_failed = 0;

static void write_all(const char *text, size_t length) {
  while (length > 0) {
    ssize_t written = write(ledger_fd, text, length);
    if (written < 0) {
      if (errno == EINTR) continue;
      ledger_write_failed = 1;
      return;
    }
    text += written;
    length -= (size_t)written;
  }
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *buffer = (uint8_t *)aligned_alloc(LEDGER_ALIGN, LEDGER_BUFFER_BYTES);
  *size = *buffer == NULL ? 0 : LEDGER_BUFFER_BYTES;
  *max_records = 0;
}

static void write_kernel(const CUpti_ActivityKernel9 *kernel) {
  char line[1024];
  const char *name = kernel->name == NULL ? "?" : kernel->name;
  int length = snprintf(line, sizeof line, "K\t%.900s\t%llu\t%llu\t%u\t%u\n", name,
                        (unsigned long long)kernel->start, (unsigned long long)kernel->end,
                        kernel->correlationId, kernel->streamId);
  if (length > 0) write_all(line, (size_t)length < sizeof line ? (size_t)length : sizeof line - 1);
}

static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid) {
  (void)context;
  (void)size;
  CUpti_Activity *record = NULL;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL)
      write_kernel((const CUpti_ActivityKernel9 *)record);
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS && dropped > 0) {
    char line[64];
    int length = snprintf(line, sizeof line, "D\t%zu\n", dropped);
    if (length > 0) write_all(line, (size_t)length);
  }
  free(buffer);
}

/* Starts recording into fd; 0 on success, else the CUPTI error code (the caller names it). */
int ledger_start(int fd) {
  ledger_fd = fd;
  CUptiResult status = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (status != CUPTI_SUCCESS) return (int)status;
  return (int)cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
}

/* Writes out every record of kernels finished so far, then "M <marker>"; 0 on success. */
int ledger_flush(unsigned long long marker) {
  CUptiResult status = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  char line[64];
  int length = snprintf(line, sizeof line, "M\t%llu\n", marker);
  if (length > 0) write_all(line, (size_t)length);
  if (status != CUPTI_SUCCESS) return (int)status;
  return ledger_write_failed ? -1 : 0;
}

/* CUPTI's text for an error code. */
const char *ledger_error(int code) {
  const char *text = NULL;
  if (cuptiGetResultString((CUptiResult)code, &text) != CUPTI_SUCCESS || text == NULL) return "unknown CUPTI error";
  return text;
}
