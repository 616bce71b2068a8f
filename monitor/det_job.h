/* det_job.h -- a job as detection knows it: named once (c4_det_job(), at a connection's hello or a
 * replay's start), then carried with every record as this handle, so the per-record path compares
 * pointers, never names. Handles live as long as the process. */
#ifndef C4_DET_JOB_H
#define C4_DET_JOB_H

#define C4_DET_JOB_NAME 64 /* a job's name, NUL included, as the HELLO carries it */
#define C4_DET_MAX_JOBS 1024

struct c4_det_job {
  int id; /* 0 .. C4_DET_MAX_JOBS - 1, in the order jobs were first named */
  char name[C4_DET_JOB_NAME];
};

#endif
