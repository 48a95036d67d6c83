// The udev rule that lets the service, and only it, open the depth cameras: the SDKs talk to them through
// libusb (/dev/bus/usb/BBB/DDD), which udev otherwise leaves root-only. The USB ids come from the addon's
// camera registry (every compiled source's devices, so a changed [camera] source needs no reinstall). The
// nodes get the service's own group instead of a shared one (plugdev, video), so other users of those
// groups cannot watch the camera.
import type { CameraSourceDescription } from '../device/camera-catalog';

export const CAMERA_RULE_FILE = '51-face-check-cameras.rules';
/** The rule file of earlier versions (the Kinect only): removed when the new one is written. */
export const FORMER_RULE_FILES: readonly string[] = ['51-face-check-kinect.rules'];

const HEX4 = /^[0-9a-f]{4}$/;

export function cameraUdevRule(group: string, sources: readonly CameraSourceDescription[]): string {
  if (!/^[a-z_][a-z0-9_-]*$/.test(group)) throw new Error(`not a group name: ${JSON.stringify(group)}`);
  const lines = [
    '# The depth cameras for the face-check service: read and written by its group only.',
    '# Written by `face-check service install` from the camera sources of the installed addon;',
    '# running it again rewrites this file.',
  ];
  for (const source of sources) {
    if (!source.usb.length) continue;
    lines.push(`# ${source.name}: ${source.summary}`);
    for (const { vendor, product, model } of source.usb) {
      if (!HEX4.test(vendor) || (product && !HEX4.test(product))) throw new Error(`${source.name}: bad USB id ${vendor}:${product}`);
      lines.push(`# ${model}`);
      lines.push(`SUBSYSTEM=="usb", ATTR{idVendor}=="${vendor}", ${product ? `ATTR{idProduct}=="${product}", ` : ''}MODE="0660", GROUP="${group}"`);
    }
  }
  return [...lines, ''].join('\n');
}

/** The vendors the rule names, for `udevadm trigger` after a reload. */
export function cameraVendors(sources: readonly CameraSourceDescription[]): string[] {
  return [...new Set(sources.flatMap((s) => s.usb.map((u) => u.vendor)))];
}
