// @ts-check
/* A background job as the pages read it (studio/jobs.py: queued → running → succeeded | failed | cancelled). */

/* The statuses a job never leaves (studio.jobs.JOB_TRANSITIONS: those with no way out); a page stops polling there. */
export const FINISHED = Object.freeze(["succeeded", "failed", "cancelled"]);

export const isFinished = (status) => FINISHED.includes(status);
