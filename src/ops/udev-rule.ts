// The udev rule that lets the service, and only it, open the Kinect v1: libfreenect talks to the camera, the
// audio device and the motor through libusb (/dev/bus/usb/BBB/DDD), which udev otherwise leaves root-only.
// The nodes get the service's own group instead of a shared one (plugdev, video), so other users of those
// groups cannot watch the camera.

export const KINECT_RULE_FILE = '51-face-check-kinect.rules';

/** Microsoft's USB vendor id and the Kinect v1's three devices, for the Xbox 360 model and Kinect for Windows. */
export const KINECT_VENDOR = '045e';
export const KINECT_PRODUCTS: readonly { id: string; what: string }[] = [
  { id: '02ae', what: 'Xbox NUI Camera (Kinect for Xbox 360)' },
  { id: '02ad', what: 'Xbox NUI Audio (Kinect for Xbox 360)' },
  { id: '02b0', what: 'Xbox NUI Motor (Kinect for Xbox 360)' },
  { id: '02bf', what: 'camera (Kinect for Windows v1)' },
  { id: '02be', what: 'audio (Kinect for Windows v1)' },
  { id: '02c2', what: 'motor (Kinect for Windows v1)' },
];

export function kinectUdevRule(group: string): string {
  if (!/^[a-z_][a-z0-9_-]*$/.test(group)) throw new Error(`not a group name: ${JSON.stringify(group)}`);
  return [
    '# The Kinect v1 for the face-check service: read and written by its group only.',
    '# Written by `face-check service install`; running it again rewrites this file.',
    ...KINECT_PRODUCTS.flatMap(({ id, what }) => [
      `# ${what}`,
      `SUBSYSTEM=="usb", ATTR{idVendor}=="${KINECT_VENDOR}", ATTR{idProduct}=="${id}", MODE="0660", GROUP="${group}"`,
    ]),
    '',
  ].join('\n');
}
