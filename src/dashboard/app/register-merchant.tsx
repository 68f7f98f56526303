// Register a merchant (registerClientUser) from the organisations page: a
// user and a new organisation for the shop's domain, assigned to the platform
// account. Platform sessions only (a merchant session gets 403/4031).
import { useState } from 'preact/hooks';
import { api, ApiFailure, call, platform } from './api.ts';
import { BASE, navigate } from './router.ts';
import { ErrorNote } from './ui.tsx';

const FIELDS = [
  ['domain', 'Shop domain', 'shop.example.com', 'text', true],
  ['organisation_name', 'Organisation name', "Jane's Linen Shop", 'text', false],
  ['email', 'Merchant email', 'jane@shop.example.com', 'email', true],
  ['name', 'Merchant name', 'Jane Doe', 'text', false],
  ['phone', 'Phone', '+14155550123', 'tel', false],
] as const;

type Field = (typeof FIELDS)[number][0];

export function RegisterMerchant({ onClose }: { onClose: () => void }) {
  const [values, setValues] = useState<Record<Field, string>>({ domain: '', organisation_name: '', email: '', name: '', phone: '' });
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiFailure | null>(null);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const r = await call(
        api.POST('/v1/rest/{platform_name}/users/register', {
          params: { path: { platform_name: platform() } },
          body: {
            email: values.email.trim(),
            domain: values.domain.trim(),
            name: values.name.trim(),
            phone: values.phone.trim(),
            organisation_name: values.organisation_name.trim(),
          },
        }),
      );
      navigate(`${BASE}/organisations/${r.organisation.id}`);
    } catch (err) {
      setError(err as ApiFailure);
      setBusy(false);
    }
  };

  const fieldError = (f: Field) => error?.errors.find((x) => x.path === `body.${f}` || x.path === `/${f}`)?.message;
  return (
    <form class="panel" onSubmit={submit} aria-labelledby="register-title">
      <h2 id="register-title">Register a merchant</h2>
      <p class="help">Creates the merchant's user and an organisation for the shop's domain, assigned to your platform account.</p>
      {FIELDS.map(([f, label, example, type, required]) => (
        <div key={f}>
          <label for={`reg-${f}`}>
            {label}
            {!required && <span class="muted"> (optional)</span>}
          </label>
          <input
            id={`reg-${f}`}
            type={type}
            required={required}
            placeholder={example}
            value={values[f]}
            aria-invalid={fieldError(f) ? 'true' : undefined}
            onInput={(e) => setValues({ ...values, [f]: e.currentTarget.value })}
          />
          {fieldError(f) && <p class="field-error">{fieldError(f)}</p>}
        </div>
      ))}
      {error && <ErrorNote error={error} />}
      <div class="actions">
        <button type="submit" disabled={busy}>
          {busy ? 'Registering…' : 'Register merchant'}
        </button>
        <button type="button" class="secondary" onClick={onClose}>
          Cancel
        </button>
      </div>
    </form>
  );
}
