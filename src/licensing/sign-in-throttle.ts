// The sign-in throttle's rules and key names live with the storage that keeps its counters: in this process
// for LMDB (../storage/lmdb/sign-in-throttle.ts), shared by every node for PostgreSQL.
export { SignInThrottle, type Attempt, type ThrottleOptions } from '../storage/lmdb/sign-in-throttle';
