// The browser-safe entry (fetch only): photos as bytes, Blobs or base64, faceKeys, unsigned keys. Node adds
// file paths and request signing through '@face-check/client/node'.
export { FaceCheckClient } from './client';
export type { CallOptions, ClientOptions, CompareOptions, FaceInput, ImageInput, RequestSigner } from './client';
export { API_VERSION, DEFAULT_COMPARE_THRESHOLD, OPERATIONS } from './contract';
export type { CompareResult, LiveFace, Mode, OperationContract, OperationName, Person } from './contract';
export * from './errors';
