package web

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
)

// The sandbox's timeDomain setting gives the alerts operator its
// timeDomain option, a share link carries it back, and bad values or a
// template without timers are refused with the reason.
func TestTimeDomainSettingBuildsTheSpec(t *testing.T) {
	tpl, ok := Template("alerts")
	require.True(t, ok)
	for _, domain := range []string{engine.TimeDomainProcessing, engine.TimeDomainEvent} {
		q, err := url.ParseQuery("timeDomain=" + domain + "&ttl=1s")
		require.NoError(t, err)
		set, err := ParseSettings(tpl, q)
		require.NoError(t, err)
		spec, err := tpl.Build(set)
		require.NoError(t, err)
		n := 0
		for _, o := range spec.Operators {
			if o.Kind == engine.KindAlerts {
				n++
				assert.Equal(t, domain, o.Options["timeDomain"])
				assert.Equal(t, "1s", o.Options["ttl"])
			} else {
				assert.NotContains(t, o.Options, "timeDomain", o.ID)
			}
		}
		require.Equal(t, 1, n)
		back, err := settingsFromSpec(tpl, spec)
		require.NoError(t, err, "a share link rebuilds the same job")
		assert.Equal(t, domain, back.Get("timeDomain"))
	}
	// The default leaves the option out: the job is the one it always was.
	set, err := ParseSettings(tpl, url.Values{})
	require.NoError(t, err)
	spec, err := tpl.Build(set)
	require.NoError(t, err)
	for _, o := range spec.Operators {
		assert.NotContains(t, o.Options, "timeDomain", o.ID)
	}

	wc, _ := Template("wordcount")
	for _, tc := range []struct {
		tpl         *JobTemplate
		query, want string
	}{
		{tpl, "timeDomain=wall", `timeDomain: "wall" is unknown; choose event`},
		{wc, "timeDomain=processing", "only the alerts template takes it"},
	} {
		q, err := url.ParseQuery(tc.query)
		require.NoError(t, err)
		_, err = ParseSettings(tc.tpl, q)
		require.ErrorIs(t, err, ErrBadArgs, tc.query)
		assert.Contains(t, err.Error(), tc.want, tc.query)
	}
}

// The sandbox form offers the state TTL to every template with keyed state
// and the time domain to the alerts template only, in English and Chinese.
func TestSandboxFormOffersTTLAndTimeDomain(t *testing.T) {
	ts := newRealServer(t, nil)
	page := func(lang string) string {
		resp, err := http.Get(ts.hs.URL + "/sandbox?lang=" + lang)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	en := page("en")
	for _, name := range []string{"ttl", "ttlUpdateType", "ttlStateVisibility", "ttlCleanupFullSnapshot", "timeDomain"} {
		assert.Contains(t, en, `name="`+name+`"`)
	}
	assert.Contains(t, en, `value="OnReadAndWrite"`)
	assert.Contains(t, en, `value="ReturnExpiredIfNotCleanedUp"`)
	assert.Contains(t, en, `value="processing"`)
	assert.Contains(t, en, "State TTL")
	zh := page("zh")
	assert.Contains(t, zh, "状态 TTL")
	assert.Contains(t, zh, "处理时间")

	// Which templates each field is for.
	fieldFor := func(id string) []string {
		m := regexp.MustCompile(`<div class="field[^"]*" data-templates="([^"]*)">\s*<label for="` + id + `"`).FindStringSubmatch(en)
		require.NotNil(t, m, "the field of %s names its templates", id)
		return strings.Fields(m[1])
	}
	var keyed []string
	for _, tpl := range Templates {
		for _, o := range tpl.build(tpl.Defaults).Operators {
			if keyedKind(o.Kind) {
				keyed = append(keyed, tpl.ID)
				break
			}
		}
	}
	require.NotEmpty(t, keyed)
	assert.ElementsMatch(t, keyed, fieldFor("ttl"))
	assert.ElementsMatch(t, keyed, fieldFor("ttlStateVisibility"))
	assert.Equal(t, []string{"alerts"}, fieldFor("timeDomain"))
}
