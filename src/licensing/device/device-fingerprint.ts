// The device fingerprint a licence is bound to: HMAC-SHA256 keyed by the machine id, over a fixed label and
// the camera's serial. The machine id itself never leaves the board (only the HMAC does), and the label
// keeps this value from equalling any other hash of the same id.
//
// The camera serial: neither the native camera (src/device/native-camera.ts) nor libfreenect's use here
// exposes the Kinect's serial, so the device passes "" and the fingerprint follows the board alone.
import crypto from 'node:crypto';
import fs from 'node:fs';
import { ConfigError } from '../../config/load';

export const FINGERPRINT_LABEL = 'face-check device fingerprint\0';

/** Lowercase hex HMAC-SHA256(key = machine id trimmed, data = label + camera serial). */
export function deviceFingerprint(machineId: string, cameraSerial = ''): string {
  const key = machineId.trim();
  if (key.length === 0) throw new Error('the machine id is empty');
  return crypto.createHmac('sha256', Buffer.from(key, 'utf8')).update(FINGERPRINT_LABEL + cameraSerial, 'utf8').digest('hex');
}

/** The fingerprint of this board from [licence] machine_id_file; a missing or empty file is a ConfigError. */
export function readDeviceFingerprint(machineIdFile: string, cameraSerial = ''): string {
  let text: string;
  try {
    text = fs.readFileSync(machineIdFile, 'utf8');
  } catch (err) {
    throw new ConfigError('[licence] machine_id_file', `cannot read the machine id: ${(err as Error).message}`);
  }
  if (text.trim().length === 0) throw new ConfigError('[licence] machine_id_file', `${machineIdFile} is empty`);
  return deviceFingerprint(text, cameraSerial);
}
