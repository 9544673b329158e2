// Colours of subtasks (key-group owners, partition owners): the Okabe–Ito
// palette, distinguishable with the common colour-vision deficiencies, then
// further hues for wide operators.
const OWNERS = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442', '#000000',
  '#7f5af0', '#2cb1bc', '#b5651d', '#6b8e23'];

export function ownerColor(i) {
  if (i === undefined || i === null || i < 0) return '#c8ccd2';
  return OWNERS[i % OWNERS.length];
}

// Flink's web UI colours of task and job statuses (flink-runtime-web).
export const STATUS_COLOR = {
  CREATED: '#2f54eb', SCHEDULED: '#722ed1', DEPLOYING: '#13c2c2', INITIALIZING: '#13c2c2',
  RUNNING: '#52c41a', FINISHED: '#1890ff', CANCELING: '#faad14', CANCELED: '#fa8c16',
  FAILED: '#f5222d', FAILING: '#f5222d', RESTARTING: '#faad14', RECONCILING: '#eb2f96',
  IN_PROGRESS: '#faad14', COMPLETED: '#1890ff',
};
