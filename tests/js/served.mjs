// What the server serves, exactly, written to files by tests/serving/test_js_units.py: the action table
// (traces.actions.action_table_json, STUDIO_ACTION_TABLE) and points the grammar computed from pixels
// (traces.actions.from_screen_pixels, STUDIO_GRAMMAR_POINTS). The page's modules are tested against the server's
// rules, not against a copy kept here.
import { readFileSync } from "node:fs";

function served(variable) {
  const path = process.env[variable];
  if (!path) throw new Error(`${variable} is not set: run these through pytest tests/serving/test_js_units.py`);
  return JSON.parse(readFileSync(path, "utf-8"));
}
export const TABLE = served("STUDIO_ACTION_TABLE");
export const GRAMMAR_POINTS = served("STUDIO_GRAMMAR_POINTS");
// The server's error kinds (studio.errors.STATUS_BY_KIND), the one it gives a lost login, and its own answers to
// refusals of every kind and to lost logins (studio.api.exception_handler), each with whether it is a lost login
// (STUDIO_ERROR_ANSWERS).
export const ERRORS = served("STUDIO_ERROR_ANSWERS");
// The job statuses, those a job never leaves (studio.jobs.JOB_TRANSITIONS) and the API's answer for a pre-scoring
// job in each status (prescoring.api.PrescoreJobSerializer) (STUDIO_JOB_ANSWERS).
export const JOBS = served("STUDIO_JOB_ANSWERS");
