// One node of npm run bench:scale: the tests' service child (the real start-up of src/start/start-service.ts: store,
// galleries, follower, HTTP, with the fake face engine), so the bench measures the storage and gallery side
// and not the engine. Usage: node dist/bench/scale-node.js <ini>; logs "Server listening at …" when it serves.
import '../test/helpers/fake-service-main';
