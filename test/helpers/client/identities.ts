// Fake-engine identities with a scripted behaviour in service-main.ts.
export const FAILING_IDENTITY = 0xdead;
export const HELD_IDENTITY = 0xbeef;
