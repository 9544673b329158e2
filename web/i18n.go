package web

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/statelab/statelab/static"
)

// Language is one UI language.
type Language struct {
	Code string // "en", "zh"
	Name string // as written in that language
}

// Languages are the UI languages, the default first.
var Languages = []Language{{Code: "en", Name: "English"}, {Code: "zh", Name: "中文"}}

// Catalog holds the message catalogues static/i18n/<lang>.json. The same
// files serve the pages (here) and the live views (in the browser), so a
// word is translated once.
type Catalog struct {
	msgs map[string]map[string]string
}

// LoadCatalog reads every language's catalogue from the embedded assets.
func LoadCatalog() (*Catalog, error) {
	c := &Catalog{msgs: map[string]map[string]string{}}
	for _, l := range Languages {
		data, err := fs.ReadFile(static.FS, "i18n/"+l.Code+".json")
		if err != nil {
			return nil, fmt.Errorf("read catalogue %s: %w", l.Code, err)
		}
		m := map[string]string{}
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("read catalogue %s: %w", l.Code, err)
		}
		c.msgs[l.Code] = m
	}
	return c, nil
}

// Missing lists keys that lang lacks but English has, sorted.
func (c *Catalog) Missing(lang string) []string {
	var out []string
	for k := range c.msgs["en"] {
		if _, ok := c.msgs[lang][k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// T returns the translator of lang: a key's text in lang, else in English,
// else the key itself (so a missing key shows, rather than a blank).
func (c *Catalog) T(lang string) func(string) string {
	m, en := c.msgs[lang], c.msgs["en"]
	return func(key string) string {
		if v, ok := m[key]; ok {
			return v
		}
		if v, ok := en[key]; ok {
			return v
		}
		return key
	}
}

func knownLang(code string) bool {
	for _, l := range Languages {
		if l.Code == code {
			return true
		}
	}
	return false
}

// langCookie remembers the chosen language.
const langCookie = "statelab-lang"

// pickLang chooses the page language: ?lang= (remembered in a cookie), then
// the cookie, then the browser's Accept-Language, then English.
func pickLang(w http.ResponseWriter, r *http.Request) string {
	if l := r.URL.Query().Get("lang"); knownLang(l) {
		http.SetCookie(w, &http.Cookie{Name: langCookie, Value: l, Path: "/", MaxAge: int((365 * 24 * time.Hour).Seconds()), SameSite: http.SameSiteLaxMode})
		return l
	}
	if ck, err := r.Cookie(langCookie); err == nil && knownLang(ck.Value) {
		return ck.Value
	}
	for _, part := range strings.Split(r.Header.Get("Accept-Language"), ",") {
		tag := strings.ToLower(strings.TrimSpace(strings.SplitN(part, ";", 2)[0]))
		if i := strings.IndexByte(tag, '-'); i > 0 {
			tag = tag[:i]
		}
		if knownLang(tag) {
			return tag
		}
	}
	return "en"
}
