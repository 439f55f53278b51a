package web

import "encoding/json"

// Push is what the web channel needs of Web Push (internal/push): the VAPID
// public key, and the devices' subscriptions.
type Push interface {
	// PublicKey is the VAPID public key, URL-safe base64 (applicationServerKey).
	PublicKey() string
	// Subscribe ties a browser's PushSubscription JSON to a device.
	Subscribe(device string, subscription json.RawMessage) error
	// Subscribed reports whether a device has a subscription.
	Subscribed(device string) bool
	// DeviceGone drops a revoked device's subscriptions.
	DeviceGone(device string)
}
